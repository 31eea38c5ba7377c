//! A proof request as the engine sees it (the transport-neutral form of
//! `cuzk.v1.SubmitProofRequest`), and the small decoders its fields need.

use crate::error::InputError;
use crate::registry::ProofKind;

/// Everything a client sends for one proof. Which fields matter depends on `kind`:
/// PoRep uses `vanilla_proof` (C1 output); PoSt and SnapDeals use `vanilla_proofs`.
#[derive(Clone, Debug, Default)]
pub struct ProofRequest {
    pub kind: Option<ProofKind>,
    /// Filecoin's Go `abi` registered-proof number.
    pub registered_proof: u64,
    /// Sector size in bytes; 0 means "take it from the registered proof".
    pub sector_size: u64,
    pub vanilla_proof: Vec<u8>,
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    pub comm_r_old: Vec<u8>,
    pub comm_r_new: Vec<u8>,
    pub comm_d_new: Vec<u8>,
}

/// filecoin-ffi's prover id: the actor id as an unsigned LEB128 varint, zero-padded to 32
/// bytes (miner 1000 → `e8 07 00 … 00`).
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// A 32-byte commitment field.
pub fn commitment(name: &'static str, bytes: &[u8]) -> Result<[u8; 32], InputError> {
    let c: [u8; 32] = bytes.try_into().map_err(|_| InputError::BadLength { name, got: bytes.len() })?;
    if c == [0u8; 32] {
        return Err(InputError::Invalid { what: name, reason: "all-zero commitment".into() });
    }
    Ok(c)
}

/// PoSt randomness: 32 bytes, reduced into the field the way filecoin-ffi does (top two bits
/// of the last byte cleared).
pub fn post_randomness(bytes: &[u8]) -> Result<[u8; 32], InputError> {
    let mut r: [u8; 32] =
        bytes.try_into().map_err(|_| InputError::BadLength { name: "randomness", got: bytes.len() })?;
    r[31] &= 0x3f;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_padded() {
        let id = prover_id_from_miner(1000);
        assert_eq!(&id[..3], &[0xe8, 0x07, 0x00]);
        assert!(id[2..].iter().all(|&b| b == 0));
        assert_eq!(prover_id_from_miner(0)[0], 0);
        assert_eq!(&prover_id_from_miner(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id_from_miner(128)[..3], &[0x80, 0x01, 0]);
        assert_eq!(
            &prover_id_from_miner(u64::MAX)[..10],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn field_decoders_reject_bad_lengths() {
        assert!(matches!(commitment("comm_r_old", &[1u8; 31]), Err(InputError::BadLength { got: 31, .. })));
        assert!(matches!(commitment("comm_r_old", &[0u8; 32]), Err(InputError::Invalid { .. })));
        assert_eq!(post_randomness(&[0xffu8; 32]).unwrap()[31], 0x3f);
        assert!(post_randomness(&[]).is_err());
    }
}
