#!/usr/bin/env python3
"""Wire-compatibility check of cuzk-daemon from another gRPC stack (Python grpcio).

Compiles proto/cuzk/v1/proving.proto with grpc_tools.protoc into a temporary directory at run
time, connects to the daemon (--addr unix:///path/to.sock, http://host:port or host:port),
calls GetStatus, then Prove for the fixture set's WindowPoSt partition (inputs read from
--fixtures DIR/manifest.json), and checks the job COMPLETED with one 192-byte proof.

Needs: grpcio, grpcio-tools (and protobuf, which grpcio-tools pulls in).
Exit status: 0 when every check passed, 1 otherwise (2 for usage errors).
"""

import argparse
import importlib
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "proto"))
PROTO_FILE = "cuzk/v1/proving.proto"
MAX_MESSAGE_BYTES = 256 << 20  # what Curio's client allows, both ways
PROOF_BYTES = 192


class CheckFailed(Exception):
    pass


def compile_stubs(proto_root, out_dir):
    """Generate proving_pb2 / proving_pb2_grpc into out_dir and import them."""
    from grpc_tools import protoc

    try:
        from importlib.resources import files

        well_known = str(files("grpc_tools") / "_proto")
    except Exception:  # older Pythons / packaging layouts
        import grpc_tools

        well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    if not os.path.isfile(os.path.join(proto_root, PROTO_FILE)):
        raise CheckFailed(f"{PROTO_FILE} not found under {proto_root}")
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{well_known}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            os.path.join(proto_root, PROTO_FILE),
        ]
    )
    if rc != 0:
        raise CheckFailed(f"grpc_tools.protoc failed with status {rc}")
    sys.path.insert(0, out_dir)
    pb2 = importlib.import_module("cuzk.v1.proving_pb2")
    pb2_grpc = importlib.import_module("cuzk.v1.proving_pb2_grpc")
    return pb2, pb2_grpc


def grpc_target(addr):
    """cuzk-bench style address -> grpcio target string."""
    addr = addr.strip()
    if addr.startswith("unix:"):
        return addr  # grpcio understands unix:///abs/path and unix:/abs/path
    if addr.startswith("http://"):
        addr = addr[len("http://"):]
    return addr.rstrip("/")


def load_window_request(pb2, fixtures):
    path = os.path.join(fixtures, "manifest.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except OSError as e:
        raise CheckFailed(f"cannot read the fixture manifest {path}: {e}")
    vanilla = []
    for name in m["window_vanilla_files"]:
        with open(os.path.join(fixtures, name), "rb") as f:
            vanilla.append(f.read())
    randomness = bytes.fromhex(m["window_randomness_hex"])
    if len(randomness) != 32:
        raise CheckFailed(f"window_randomness_hex is {len(randomness)} bytes, expected 32")
    submit = pb2.SubmitProofRequest(
        request_id=f"py-wire-compat-{os.getpid()}-{time.time_ns()}",
        proof_kind=pb2.WINDOW_POST_PARTITION,
        sector_size=m["sector_size"],
        registered_proof=m["window_registered_proof"],
        priority=pb2.PRIORITY_UNSPECIFIED,
        vanilla_proofs=vanilla,
        sector_number=m["sector_number"],
        miner_id=m["miner_id"],
        randomness=randomness,
        partition_index=m["window_partition_index"],
    )
    return submit, m


def check_enums(pb2):
    """The wire numbers Curio depends on."""
    expected = {
        "POREP_SEAL_COMMIT": 1,
        "SNAP_DEALS_UPDATE": 2,
        "WINDOW_POST_PARTITION": 3,
        "WINNING_POST": 4,
        "LOW": 1,
        "NORMAL": 2,
        "HIGH": 3,
        "CRITICAL": 4,
    }
    for name, number in expected.items():
        if getattr(pb2, name) != number:
            raise CheckFailed(f"enum {name} is {getattr(pb2, name)}, expected {number}")
    if pb2.AwaitProofResponse.COMPLETED != 1 or pb2.AwaitProofResponse.TIMEOUT != 4:
        raise CheckFailed("AwaitProofResponse.Status numbers differ from the wire contract")


def run(args):
    import grpc

    with tempfile.TemporaryDirectory(prefix="cuzk-wire-") as out_dir:
        pb2, pb2_grpc = compile_stubs(args.proto_root, out_dir)
        check_enums(pb2)
        submit, manifest = load_window_request(pb2, args.fixtures)

        target = grpc_target(args.addr)
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ]
        # On unix sockets grpcio sends its default :authority, the %-encoded socket path
        # (grpc/grpc#38142), unlike grpc-go's "localhost": the daemon must accept it.
        with grpc.insecure_channel(target, options=options) as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=args.connect_timeout)
            except grpc.FutureTimeoutError:
                raise CheckFailed(f"cannot connect to cuzk-daemon at {args.addr} within {args.connect_timeout} s")
            stub = pb2_grpc.ProvingEngineStub(channel)

            # Curio polls GetStatus with a 5 s deadline.
            status = stub.GetStatus(pb2.GetStatusRequest(), timeout=5)
            kinds = sorted(q.proof_kind for q in status.queues)
            print(
                f"GetStatus: uptime {status.uptime_seconds} s, completed {status.total_proofs_completed}, "
                f"failed {status.total_proofs_failed}, queues {kinds}, resident parameters "
                f"{[s.circuit_id for s in status.loaded_srs]}"
            )

            started = time.monotonic()
            reply = stub.Prove(pb2.ProveRequest(submit=submit), timeout=args.prove_timeout)
            took = time.monotonic() - started
            if not reply.HasField("result"):
                raise CheckFailed("ProveResponse has no result")
            r = reply.result
            status_name = pb2.AwaitProofResponse.Status.Name(r.status)
            print(
                f"Prove WindowPoSt (registered proof {manifest['window_registered_proof']}, "
                f"partition {manifest['window_partition_index']}): job {r.job_id} {status_name}, "
                f"{len(r.proof)} proof bytes, daemon total {r.total_ms} ms "
                f"(queue {r.queue_wait_ms}, srs {r.srs_load_ms}, synthesis {r.synthesis_ms}, "
                f"prove {r.gpu_compute_ms}), round-trip {took:.2f} s"
            )
            if r.status != pb2.AwaitProofResponse.COMPLETED:
                raise CheckFailed(f"job {r.job_id} ended {status_name}: {r.error_message}")
            if len(r.proof) != PROOF_BYTES:
                raise CheckFailed(f"proof is {len(r.proof)} bytes, expected {PROOF_BYTES}")
            if not r.job_id:
                raise CheckFailed("the result carries no job id")

            after = stub.GetStatus(pb2.GetStatusRequest(), timeout=5)
            if after.total_proofs_completed < status.total_proofs_completed + 1:
                raise CheckFailed(
                    f"total_proofs_completed went from {status.total_proofs_completed} to "
                    f"{after.total_proofs_completed} across a completed proof"
                )
    print("wire compatibility: OK (grpcio %s)" % grpc.__version__)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--addr", default=os.environ.get("CUZK_ADDR", "unix:///run/cuzk/cuzk.sock"),
                   help="daemon address: unix:///path/to.sock, http://host:port or host:port")
    p.add_argument("--fixtures", default=os.environ.get("CUZK_FIXTURES", "/var/tmp/cuzk-fixtures-2k"),
                   help="the 2 KiB fixture set's directory (manifest.json)")
    p.add_argument("--proto-root", default=DEFAULT_PROTO_ROOT,
                   help="directory holding cuzk/v1/proving.proto")
    p.add_argument("--connect-timeout", type=float, default=30.0, help="seconds to wait for the channel")
    p.add_argument("--prove-timeout", type=float, default=900.0, help="deadline of the Prove call, seconds")
    args = p.parse_args()
    try:
        run(args)
    except CheckFailed as e:
        print(f"wire compatibility: FAILED: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # grpc.RpcError and anything unexpected
        if hasattr(e, "code") and callable(e.code):
            print(f"wire compatibility: FAILED: RPC error {e.code()}: {e.details()}", file=sys.stderr)
        else:
            print(f"wire compatibility: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
