// Command goclient is the Go side of crates/cuzk-daemon/tests/go_client.rs (issue #39): it
// calls cuzk-daemon from grpc-go, the gRPC stack Curio uses, with the stubs protoc generated
// from proto/cuzk/v1/proving.proto at test time, and only the unary Prove RPC, as Curio does.
//
// Curio's habits it keeps (shared/notes/wire-api.md), since each is something the daemon has
// to accept from a Go client:
//   - the address as in Curio's [Cuzk] Address: `unix:///abs/path` dialled as given (grpc-go
//     then sends `:authority: localhost`), a bare `host:port` as `dns:///host:port`;
//   - plaintext HTTP/2, 256 MiB as the largest message both ways, one connection for every
//     call, a 30 min deadline on each Prove (sent as `grpc-timeout`);
//   - request ids `porep-<miner>-<sector>`, `snap-<miner>-<sector>`, `winpost-<miner>-<hex>`
//     and `wdpost-<miner>-0-<%v of the first eight randomness bytes>`, every partition of the
//     WindowPoSt deadline sent one after another under that one id;
//   - priorities PoRep and SnapDeals NORMAL, WindowPoSt HIGH, WinningPoSt CRITICAL;
//   - the PoRep input in Curio's JSON envelope, made with encoding/json (Phase1Out base64).
//
// With CUZK_TOKEN set, every call carries `authorization: Bearer <token>` (daemon.auth_token,
// which the daemon requires on TCP). Curio itself sends none; the socket's group guards it.
//
// With -deadline-only, only the WinningPoSt and the WindowPoSt deadline are sent (the Rust test's
// second daemon: what it is there for is the transport and the token, which the PoRep and
// SnapDeals calls, the costliest proofs, go through just as these do).
//
// Inputs come from the 2 KiB fixture set (-fixtures DIR). Each proof is written to -out DIR as
// <name>.proof, and every call to <out>/calls.json (name, request id, job id), for the Rust
// test to check and to verify with filecoin-proofs. A refused call, a status other than
// COMPLETED, a proof that is not 192 bytes, or a wrong job for a partition makes it exit 1.
package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "cuzktest/cuzkpb"
)

const (
	maxMessageBytes = 256 << 20        // Curio's limit, both ways
	proveDeadline   = 30 * time.Minute // Curio's default ProveTimeout
	proofBytes      = 192              // one partition's Groth16 proof: every 2 KiB proof here
)

// The fields of the fixture set's manifest.json used here.
type manifest struct {
	SectorSize             uint64   `json:"sector_size"`
	MinerID                uint64   `json:"miner_id"`
	SectorNumber           uint64   `json:"sector_number"`
	PorepRegisteredProof   uint64   `json:"porep_registered_proof"`
	PorepC1File            string   `json:"porep_c1_file"`
	WinningRegisteredProof uint64   `json:"winning_registered_proof"`
	WinningRandomnessHex   string   `json:"winning_randomness_hex"`
	WinningVanillaFiles    []string `json:"winning_vanilla_files"`
	WindowRegisteredProof  uint64   `json:"window_registered_proof"`
	WindowRandomnessHex    string   `json:"window_randomness_hex"`
	WindowPartitionIndex   uint32   `json:"window_partition_index"`
	WindowVanillaFiles     []string `json:"window_vanilla_files"`
	SnapRegisteredProof    uint64   `json:"snap_registered_proof"`
	SnapVanillaFiles       []string `json:"snap_vanilla_files"`
	CommROldHex            string   `json:"comm_r_old_hex"`
	CommRNewHex            string   `json:"comm_r_new_hex"`
	CommDNewHex            string   `json:"comm_d_new_hex"`
}

// Curio's PoRep C2 input; encoding/json writes the []byte as base64.
type c1Envelope struct {
	SectorNum  uint64
	Phase1Out  []byte
	SectorSize uint64
}

// One answered call, as calls.json lists it for the Rust test.
type call struct {
	Name      string `json:"name"`
	RequestID string `json:"request_id"`
	JobID     string `json:"job_id"`
}

// A bearer token on every call. No transport security is required: the daemon speaks
// plaintext HTTP/2, and the token guards a loopback listener.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

func main() {
	addr := flag.String("addr", "", "daemon address: unix:///abs/path or host:port")
	fixtures := flag.String("fixtures", "/var/tmp/cuzk-fixtures-2k", "the 2 KiB fixture set")
	out := flag.String("out", "", "directory for <name>.proof and calls.json")
	deadlineOnly := flag.Bool("deadline-only", false, "send only the WinningPoSt and the WindowPoSt deadline")
	flag.Parse()
	// grpc.Version is compiled in: the grpc-go that actually ran.
	fmt.Printf("go client: grpc-go %s, %s, target %s\n", grpc.Version, runtime.Version(), *addr)
	if err := run(*addr, *fixtures, *out, os.Getenv("CUZK_TOKEN"), *deadlineOnly); err != nil {
		fmt.Fprintf(os.Stderr, "go client: FAILED: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("go client: OK (grpc-go %s)\n", grpc.Version)
}

// The dial target for an address written as in Curio's [Cuzk] Address: a bare host:port
// goes to the DNS resolver, as newer grpc-go's NewClient would do by default.
func target(addr string) string {
	if strings.HasPrefix(addr, "unix:") || strings.Contains(addr, "://") {
		return addr
	}
	return "dns:///" + addr
}

// The calls made so far, kept for calls.json (the goroutines add to it concurrently).
type callLog struct {
	mu    sync.Mutex
	calls []call
}

func (l *callLog) add(name string, req *pb.SubmitProofRequest, r *pb.AwaitProofResponse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call{Name: name, RequestID: req.RequestId, JobID: r.JobId})
}

func run(addr, fixtures, out, token string, deadlineOnly bool) error {
	if addr == "" || out == "" {
		return fmt.Errorf("-addr and -out are required")
	}
	reqs, err := requests(fixtures)
	if err != nil {
		return err
	}
	// grpc-go 1.33 has no credentials/insecure package; WithInsecure is its plaintext option.
	opts := []grpc.DialOption{
		grpc.WithInsecure(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	// Not blocking: the connection is made by the first call, as with Curio's lazy client.
	conn, err := grpc.Dial(target(addr), opts...)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	c := pb.NewProvingEngineClient(conn)
	var calls callLog

	// Curio's tasks share the connection and run at the same time: PoRep, SnapDeals and
	// WinningPoSt on goroutines of their own, beside the WindowPoSt deadline's partitions.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	single := func(name string, req *pb.SubmitProofRequest) {
		defer wg.Done()
		r, err := prove(c, name, req)
		if err == nil {
			calls.add(name, req, r)
			err = save(out, name, r.Proof)
		}
		errs <- err
	}
	if !deadlineOnly {
		wg.Add(2)
		go single("porep", reqs.porep)
		go single("snap", reqs.snap)
	}
	wg.Add(2)
	go single("winpost", reqs.winpost)
	go func() {
		defer wg.Done()
		errs <- windowDeadline(c, out, reqs.wdpost, &calls)
	}()
	wg.Wait()
	close(errs)
	var failed []string
	for err := range errs {
		if err != nil {
			failed = append(failed, err.Error())
		}
	}
	// Written even after a failure: the Rust test shows what did come back.
	listing, err := json.MarshalIndent(calls.calls, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(out, "calls.json"), listing, 0o644)
	}
	if err != nil {
		failed = append(failed, "writing calls.json: "+err.Error())
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d failure(s):\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// The partitions of one WindowPoSt deadline, one after another under one request id; then
// partition 0 again, unchanged, as Curio's retry sends it after losing the first answer.
//
// The fixture has one sector, so its deadline has one real partition; the second here is
// that sector again with partition_index 1 (API 1.2 challenges do not depend on the index,
// so filecoin-proofs' check of the fixture accepts its proof as well). Curio sends
// partition_index 0 and its partitions differ in their vanilla proofs instead: either way,
// the daemon sees different inputs under a used id and must prove each on its own.
func windowDeadline(c pb.ProvingEngineClient, out string, p0 *pb.SubmitProofRequest, calls *callLog) error {
	p1 := proto.Clone(p0).(*pb.SubmitProofRequest)
	p1.PartitionIndex = p0.PartitionIndex + 1
	names := []string{"wdpost-p0", "wdpost-p1", "wdpost-p0-retry"}
	var got []*pb.AwaitProofResponse
	for i, req := range []*pb.SubmitProofRequest{p0, p1, p0} {
		r, err := prove(c, names[i], req)
		if err != nil {
			return err
		}
		calls.add(names[i], req, r)
		if err := save(out, names[i], r.Proof); err != nil {
			return err
		}
		got = append(got, r)
	}
	first, second, retry := got[0], got[1], got[2]
	if second.JobId == first.JobId || bytes.Equal(second.Proof, first.Proof) {
		return fmt.Errorf("wdpost-p1: got partition 0's job %s (or its proof) back for other inputs under id %q", first.JobId, p0.RequestId)
	}
	// An identical resubmission is answered with the job the daemon already has (README,
	// request_id), even after another partition went in under the same id.
	if retry.JobId != first.JobId || !bytes.Equal(retry.Proof, first.Proof) {
		return fmt.Errorf("wdpost-p0-retry: job %s, expected partition 0's job %s and its proof", retry.JobId, first.JobId)
	}
	return nil
}

// One Prove with Curio's deadline; an error for anything but a COMPLETED result carrying a
// job id and one partition's proof.
func prove(c pb.ProvingEngineClient, name string, req *pb.SubmitProofRequest) (*pb.AwaitProofResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), proveDeadline)
	defer cancel()
	start := time.Now()
	resp, err := c.Prove(ctx, &pb.ProveRequest{Submit: req})
	took := time.Since(start)
	if err != nil {
		st, _ := status.FromError(err)
		return nil, fmt.Errorf("%s (id %q): Prove refused after %v: %s: %s", name, req.RequestId, took, st.Code(), st.Message())
	}
	r := resp.GetResult()
	if r == nil {
		return nil, fmt.Errorf("%s: a ProveResponse without a result", name)
	}
	fmt.Printf("%-16s id %-46q %-22s %-8s job %s, %s, %d bytes, daemon %d ms (queue %d, synthesis %d, prove %d), round trip %.2f s\n",
		name, req.RequestId, req.ProofKind, req.Priority, r.JobId, r.Status, len(r.Proof), r.TotalMs, r.QueueWaitMs, r.SynthesisMs, r.GpuComputeMs, took.Seconds())
	switch {
	case r.Status != pb.AwaitProofResponse_COMPLETED:
		return nil, fmt.Errorf("%s: job %s ended %s: %s", name, r.JobId, r.Status, r.ErrorMessage)
	case len(r.Proof) != proofBytes:
		return nil, fmt.Errorf("%s: the proof is %d bytes, expected %d", name, len(r.Proof), proofBytes)
	case r.JobId == "":
		return nil, fmt.Errorf("%s: the result names no job", name)
	}
	return r, nil
}

type fixtureRequests struct {
	porep, snap, winpost, wdpost *pb.SubmitProofRequest
}

// The four requests, filled in as Curio's tasks fill them from their own data.
func requests(dir string) (*fixtureRequests, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the fixture manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parsing %s/manifest.json: %w", dir, err)
	}
	c1, err := os.ReadFile(filepath.Join(dir, m.PorepC1File))
	if err != nil {
		return nil, err
	}
	envelope, err := json.Marshal(c1Envelope{SectorNum: m.SectorNumber, Phase1Out: c1, SectorSize: m.SectorSize})
	if err != nil {
		return nil, err
	}
	var winning, window, snap [][]byte
	for _, f := range []struct {
		dst   *[][]byte
		names []string
	}{{&winning, m.WinningVanillaFiles}, {&window, m.WindowVanillaFiles}, {&snap, m.SnapVanillaFiles}} {
		if *f.dst, err = readAll(dir, f.names); err != nil {
			return nil, err
		}
	}
	var winRand, wdRand, commROld, commRNew, commDNew []byte
	for _, f := range []struct {
		dst        *[]byte
		field, val string
	}{
		{&winRand, "winning_randomness_hex", m.WinningRandomnessHex},
		{&wdRand, "window_randomness_hex", m.WindowRandomnessHex},
		{&commROld, "comm_r_old_hex", m.CommROldHex},
		{&commRNew, "comm_r_new_hex", m.CommRNewHex},
		{&commDNew, "comm_d_new_hex", m.CommDNewHex},
	} {
		b, err := hex.DecodeString(f.val)
		if err == nil && len(b) != 32 {
			err = fmt.Errorf("%d bytes, expected 32", len(b))
		}
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", f.field, err)
		}
		*f.dst = b
	}
	base := func(id string, kind pb.ProofKind, registered uint64, prio pb.Priority) *pb.SubmitProofRequest {
		return &pb.SubmitProofRequest{RequestId: id, ProofKind: kind, SectorSize: m.SectorSize, RegisteredProof: registered,
			Priority: prio, SectorNumber: m.SectorNumber, MinerId: m.MinerID}
	}
	r := &fixtureRequests{
		porep:   base(fmt.Sprintf("porep-%d-%d", m.MinerID, m.SectorNumber), pb.ProofKind_POREP_SEAL_COMMIT, m.PorepRegisteredProof, pb.Priority_NORMAL),
		snap:    base(fmt.Sprintf("snap-%d-%d", m.MinerID, m.SectorNumber), pb.ProofKind_SNAP_DEALS_UPDATE, m.SnapRegisteredProof, pb.Priority_NORMAL),
		winpost: base(fmt.Sprintf("winpost-%d-%s", m.MinerID, hex.EncodeToString(winRand[:8])), pb.ProofKind_WINNING_POST, m.WinningRegisteredProof, pb.Priority_CRITICAL),
		// %v of a []byte prints "[131 17 23 …]": brackets and spaces end up in the id. The 0 is
		// Curio's loop index, always 0.
		wdpost: base(fmt.Sprintf("wdpost-%d-%d-%v", m.MinerID, 0, wdRand[:8]), pb.ProofKind_WINDOW_POST_PARTITION, m.WindowRegisteredProof, pb.Priority_HIGH),
	}
	r.porep.VanillaProof = envelope
	r.snap.VanillaProofs, r.snap.CommROld, r.snap.CommRNew, r.snap.CommDNew = snap, commROld, commRNew, commDNew
	r.winpost.VanillaProofs, r.winpost.Randomness = winning, winRand
	r.wdpost.VanillaProofs, r.wdpost.Randomness, r.wdpost.PartitionIndex = window, wdRand, m.WindowPartitionIndex
	return r, nil
}

func readAll(dir string, names []string) ([][]byte, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("the manifest names no vanilla proof files")
	}
	var all [][]byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		all = append(all, b)
	}
	return all, nil
}

func save(dir, name string, proof []byte) error {
	return os.WriteFile(filepath.Join(dir, name+".proof"), proof, 0o644)
}
