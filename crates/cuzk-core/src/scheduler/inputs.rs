//! The identity of a request's inputs, by which a resubmitted `request_id` may be answered
//! with an existing job (the rule is `Job::may_answer`).
//!
//! A request id alone says nothing about what is to be proved: Curio sends every WindowPoSt
//! partition of a deadline under one id, and retries a failed PoRep or SnapDeals proof under
//! the same id within seconds. So a job is handed back for a request id only when it proves
//! exactly the same statement (every field and payload byte equal, compared by SHA-256) and
//! can still yield, or has yielded, a proof. Anything else is proved afresh, never refused:
//! Curio treats every error as a failed proof.

use cuzk_filecoin::{decode_pool, ProofRequest};
use sha2::{Digest, Sha256};

/// SHA-256 over an unambiguous encoding of every field of a [`ProofRequest`]. A
/// cryptographic hash because a collision would hand one client another's proof; hashing is
/// cheap next to decoding the request (tens of milliseconds for a 32 GiB PoRep's ~50 MB C1).
///
/// Priority is deliberately not part of it: it orders the work but does not change the
/// statement, so a resubmission at another priority still gets the same proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputDigest([u8; 32]);

/// Bumped if the encoding below ever changes (digests are never persisted, so this only keeps
/// two encodings from meaning the same bytes).
const DOMAIN: &[u8] = b"cuzk.request-inputs.v2";

impl InputDigest {
    pub fn of(req: &ProofRequest) -> InputDigest {
        // Destructured so that a field added to ProofRequest fails to compile here until it is
        // hashed too.
        let ProofRequest {
            kind,
            registered_proof,
            sector_size,
            vanilla_proof,
            vanilla_proofs,
            sector_number,
            miner_id,
            randomness,
            partition_index,
            comm_r_old,
            comm_r_new,
            comm_d_new,
        } = req;
        let mut h = Sha256::new();
        h.update(DOMAIN);
        // 0 for an unspecified kind; the wire numbers start at 1.
        h.update(kind.map_or(0u64, |k| k as u64).to_le_bytes());
        for n in [*registered_proof, *sector_size, *sector_number, *miner_id, u64::from(*partition_index)] {
            h.update(n.to_le_bytes());
        }
        for bytes in [randomness, comm_r_old, comm_r_new, comm_d_new, vanilla_proof] {
            update_framed(&mut h, bytes);
        }
        h.update((vanilla_proofs.len() as u64).to_le_bytes());
        // Each proof stands in by its own SHA-256, computed on the decode threads: hashing a
        // 32 GiB WindowPoSt's 2349 proofs (59 MB) in one stream took ~47 ms of its submit.
        // A collision-resistant digest of each proof commits to it as its bytes would.
        for each in decode_pool::map(vanilla_proofs, |proof| Sha256::digest(proof)) {
            h.update(each);
        }
        InputDigest(h.finalize().into())
    }
}

/// Length, then bytes: with every variable-length field framed, no two different requests
/// encode to the same byte stream (moving bytes from one field to the next changes a length).
fn update_framed(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

#[cfg(test)]
mod tests {
    use cuzk_filecoin::ProofKind;

    use super::*;

    fn window() -> ProofRequest {
        ProofRequest {
            kind: Some(ProofKind::WindowPostPartition),
            registered_proof: 5,
            vanilla_proofs: vec![vec![1, 2, 3], vec![4]],
            randomness: vec![7; 32],
            miner_id: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn equal_requests_have_equal_digests() {
        assert_eq!(InputDigest::of(&window()), InputDigest::of(&window()));
    }

    #[test]
    fn every_field_changes_the_digest() {
        let base = InputDigest::of(&window());
        type Change = fn(&mut ProofRequest);
        let variants: Vec<(&str, Change)> = vec![
            ("kind", |r| r.kind = Some(ProofKind::WinningPost)),
            ("no kind", |r| r.kind = None),
            ("registered_proof", |r| r.registered_proof += 1),
            ("sector_size", |r| r.sector_size = 2048),
            ("sector_number", |r| r.sector_number = 1),
            ("miner_id", |r| r.miner_id += 1),
            ("partition_index", |r| r.partition_index = 1),
            ("randomness", |r| r.randomness[31] ^= 1),
            ("comm_r_old", |r| r.comm_r_old = vec![1; 32]),
            ("comm_r_new", |r| r.comm_r_new = vec![1; 32]),
            ("comm_d_new", |r| r.comm_d_new = vec![1; 32]),
            ("vanilla_proof", |r| r.vanilla_proof = vec![0]),
            ("a vanilla_proofs byte", |r| r.vanilla_proofs[1][0] = 5),
            ("a vanilla_proofs entry more", |r| r.vanilla_proofs.push(Vec::new())),
            ("vanilla_proofs order", |r| r.vanilla_proofs.reverse()),
            // The same bytes split differently between entries.
            ("vanilla_proofs split", |r| r.vanilla_proofs = vec![vec![1, 2], vec![3, 4]]),
            // The same bytes moved from one field to the next.
            ("bytes moved between fields", |r| {
                r.comm_r_old = r.randomness.split_off(16);
            }),
        ];
        for (what, change) in variants {
            let mut r = window();
            change(&mut r);
            assert_ne!(InputDigest::of(&r), base, "changing {what} must change the digest");
        }
    }
}
