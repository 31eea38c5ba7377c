//! Multi-scalar multiplication on the CPU: blst's parallel Pippenger over points kept in
//! affine form (the SRS is decoded once into exactly blst's affine layout, so no per-proof
//! conversion), plus the density filtering Groth16's A and B queries need.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use group::Group;
use rayon::prelude::*;

use crate::density::Density;

const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());

fn scalar_bytes(scalars: &[Fr]) -> Vec<u8> {
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_mut(32).zip(scalars.par_iter()).for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

/// Σ scalars[i]·points[i]. Lengths must match.
pub fn msm_g1(points: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    assert_eq!(points.len(), scalars.len(), "MSM length mismatch");
    if points.is_empty() {
        return G1Projective::identity();
    }
    // SAFETY: blstrs' G1Affine is #[repr(transparent)] over blst_p1_affine (sizes asserted
    // above), and so is G1Projective over blst_p1.
    let raw: &[blst_p1_affine] = unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
    let r: blst_p1 = raw.mult(&scalar_bytes(scalars), 255);
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(r) }
}

/// Σ scalars[i]·points[i] in G2.
pub fn msm_g2(points: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    assert_eq!(points.len(), scalars.len(), "MSM length mismatch");
    if points.is_empty() {
        return G2Projective::identity();
    }
    // SAFETY: as for G1.
    let raw: &[blst_p2_affine] = unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
    let r: blst_p2 = raw.mult(&scalar_bytes(scalars), 255);
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(r) }
}

/// The scalars whose density bit is set, in order: these line up one-to-one with the
/// query points a parameter file stores for that density.
pub fn dense_scalars(scalars: &[Fr], density: &Density) -> Vec<Fr> {
    debug_assert_eq!(scalars.len(), density.len());
    density.ones().map(|i| scalars[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::Curve;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn msm_matches_naive_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [1usize, 2, 3, 100, 1000] {
            let pts: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let pts2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let mut sc: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            sc[0] = Fr::ZERO;
            if n > 1 {
                sc[1] = Fr::ONE;
                sc[n - 1] = -Fr::ONE;
            }
            let naive1: G1Projective = pts.iter().zip(&sc).map(|(p, s)| G1Projective::from(*p) * s).sum();
            let naive2: G2Projective = pts2.iter().zip(&sc).map(|(p, s)| G2Projective::from(*p) * s).sum();
            assert_eq!(msm_g1(&pts, &sc), naive1, "G1 n={n}");
            assert_eq!(msm_g2(&pts2, &sc), naive2, "G2 n={n}");
        }
        assert_eq!(msm_g1(&[], &[]), G1Projective::identity());
    }
}
