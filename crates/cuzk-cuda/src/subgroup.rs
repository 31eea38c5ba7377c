//! The subgroup test the device runs on parameter points (`cuda/subgroup.cuh`), its constants,
//! and the same test on the CPU (pure logic, built without CUDA too, so CI checks the
//! equations against blst's own subgroup check).
//!
//! Scott's endomorphism tests ("A note on group membership tests for G1, G2 and GT on BLS
//! pairing-friendly curves", 2021), with x the BLS12-381 parameter (negative):
//!
//! * G1: P ∈ G1 ⟺ [x²]P + σ(P) = O, where σ(X, Y) = (βX, Y) and β is the cube root of unity
//!   in Fp for which σ acts on G1 as [−x²] (x⁶ ≡ −1 mod r, so −x² is a cube root of unity);
//! * G2: P ∈ G2 ⟺ [|x|]P + ψ(P) = O, where ψ(X, Y) = (c1·conj(X), c2·conj(Y)) is the
//!   untwist–Frobenius–twist map, acting on G2 as [x].
//!
//! A fixed-scalar multiplication (128 bits in G1, 64 in G2) and one addition a point, against
//! the 255-bit multiplication by r of the plain test. The constants are derived here from the
//! field, not copied: β from √−3, c1 and c2 as powers of 1 + u; [`SubgroupConstants::new`]
//! then checks both equations on the generators and refuses constants that fail them.

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;

/// |x| of BLS12-381, x = −0xd201000000010000.
pub const X_ABS: u64 = 0xd201_0000_0001_0000;

/// The base field's modulus p, little-endian 64-bit limbs.
const P: [u64; 6] = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

/// Everything the two kernels take besides the points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubgroupConstants {
    /// β in Montgomery form (blst's in-memory limbs, as the device reads them).
    pub beta: [u64; 6],
    /// c1 and c2, each c0's limbs then c1's, Montgomery form.
    pub psi_x: [u64; 12],
    pub psi_y: [u64; 12],
    /// x² for G1 and its bit length.
    pub g1_scalar: u128,
    pub g1_bits: u32,
    /// |x| for G2 and its bit length.
    pub g2_scalar: u64,
    pub g2_bits: u32,
}

impl SubgroupConstants {
    /// Derive the constants and check them on the generators (see the module doc).
    pub fn new() -> Result<Self, String> {
        let minus_three = -Fp::from(3u64);
        let root = Option::<Fp>::from(minus_three.sqrt()).ok_or("−3 has no square root in Fp")?;
        let half = Option::<Fp>::from(Fp::from(2u64).invert()).ok_or("2 has no inverse")?;
        // The two primitive cube roots of unity; the one that acts as [−x²] on G1 is β.
        let candidates = [(root - Fp::ONE) * half, (-root - Fp::ONE) * half];
        let g1 = G1Affine::generator();
        let beta = candidates
            .into_iter()
            .find(|b| g1_in_subgroup(&g1, *b))
            .ok_or("neither cube root of unity passes the G1 generator")?;
        let one_plus_u = Fp2::new(Fp::ONE, Fp::ONE);
        let inv = |e: Fp2| Option::<Fp2>::from(e.invert()).ok_or("1 + u to that power has no inverse");
        let c1 = inv(one_plus_u.pow_vartime(div_small(sub_one(P), 3)))?;
        let c2 = inv(one_plus_u.pow_vartime(div_small(sub_one(P), 2)))?;
        if !g2_in_subgroup(&G2Affine::generator(), c1, c2) {
            return Err("ψ's constants fail on the G2 generator".into());
        }
        let g1_scalar = (X_ABS as u128) * (X_ABS as u128);
        Ok(SubgroupConstants {
            beta: limbs(beta),
            psi_x: limbs2(c1),
            psi_y: limbs2(c2),
            g1_scalar,
            g1_bits: 128 - g1_scalar.leading_zeros(),
            g2_scalar: X_ABS,
            g2_bits: 64 - X_ABS.leading_zeros(),
        })
    }

    /// The device's G1 test on the CPU.
    pub fn g1_passes(&self, p: &G1Affine) -> bool {
        g1_in_subgroup(p, Fp::from_raw_unchecked(self.beta))
    }

    /// The device's G2 test on the CPU.
    pub fn g2_passes(&self, p: &G2Affine) -> bool {
        let fp2 = |l: &[u64; 12]| {
            Fp2::new(
                Fp::from_raw_unchecked(l[..6].try_into().unwrap()),
                Fp::from_raw_unchecked(l[6..].try_into().unwrap()),
            )
        };
        g2_in_subgroup(p, fp2(&self.psi_x), fp2(&self.psi_y))
    }
}

// Why a sum at infinity is a sound test (here and on the device): the addition returns
// infinity exactly when its operands share x and not y. σ(P) and ψ(P) lie on the curve, where
// a shared x means y or −y, so the sum is O iff [k]P = −σ(P) (resp. −ψ(P)); equal points
// take the doubling branch instead.

/// [k]P by double-and-add from the top bit, as the kernel does it. blst's own scalar
/// multiplication is not used: it may take the GLV split, which is only valid inside the
/// subgroup, and these points need not be.
fn mul_by<A, P>(p: &A, k: u128, bits: u32) -> P
where
    A: Copy,
    P: Group + for<'a> std::ops::AddAssign<&'a A> + for<'a> From<&'a A>,
{
    let mut q = P::from(p);
    for b in (0..bits - 1).rev() {
        q = q.double();
        if (k >> b) & 1 == 1 {
            q += p;
        }
    }
    q
}

fn g1_in_subgroup(p: &G1Affine, beta: Fp) -> bool {
    let x2 = (X_ABS as u128) * (X_ABS as u128);
    let sigma = G1Affine::from_raw_unchecked(p.x() * beta, p.y(), false);
    let q: G1Projective = mul_by(p, x2, 128 - x2.leading_zeros());
    bool::from((q + sigma).is_identity())
}

fn g2_in_subgroup(p: &G2Affine, c1: Fp2, c2: Fp2) -> bool {
    let conj = |mut e: Fp2| {
        e.frobenius_map(1);
        e
    };
    let psi = G2Affine::from_raw_unchecked(conj(p.x()) * c1, conj(p.y()) * c2, false);
    let q: G2Projective = mul_by(p, X_ABS as u128, 64 - X_ABS.leading_zeros());
    bool::from((q + psi).is_identity())
}

/// Montgomery limbs of `f` as blst keeps them (and the device reads them).
fn limbs(f: Fp) -> [u64; 6] {
    blst::blst_fp::from(f).l
}

fn limbs2(f: Fp2) -> [u64; 12] {
    let mut out = [0u64; 12];
    out[..6].copy_from_slice(&limbs(f.c0()));
    out[6..].copy_from_slice(&limbs(f.c1()));
    out
}

fn sub_one(mut n: [u64; 6]) -> [u64; 6] {
    for limb in n.iter_mut() {
        let (v, borrow) = limb.overflowing_sub(1);
        *limb = v;
        if !borrow {
            break;
        }
    }
    n
}

/// n / d for a small d that divides n (the remainder is dropped).
fn div_small(n: [u64; 6], d: u64) -> [u64; 6] {
    let mut out = [0u64; 6];
    let mut rem: u128 = 0;
    for i in (0..6).rev() {
        let cur = (rem << 64) | n[i] as u128;
        out[i] = (cur / d as u128) as u64;
        rem = cur % d as u128;
    }
    out
}

/// A random point on the curve in G1's group E(Fp) that is (almost surely: the cofactor is
/// ~2^126) outside the prime-order subgroup: for tests of the check.
pub fn g1_off_subgroup(mut rng: impl rand_core::RngCore) -> G1Affine {
    loop {
        let x = Fp::random(&mut rng);
        let rhs = x.square() * x + Fp::from(4u64);
        if let Some(y) = Option::<Fp>::from(rhs.sqrt()) {
            let p = G1Affine::from_raw_unchecked(x, y, false);
            if bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
    }
}

/// The same on the twist, outside G2.
pub fn g2_off_subgroup(mut rng: impl rand_core::RngCore) -> G2Affine {
    let b = Fp2::new(Fp::from(4u64), Fp::from(4u64));
    loop {
        let x = Fp2::random(&mut rng);
        let rhs = x.square() * x + b;
        if let Some(y) = Option::<Fp2>::from(rhs.sqrt()) {
            let p = G2Affine::from_raw_unchecked(x, y, false);
            if bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn g1_in(mut rng: impl rand_core::RngCore) -> G1Affine {
        G1Projective::random(&mut rng).to_affine()
    }

    fn g2_in(mut rng: impl rand_core::RngCore) -> G2Affine {
        G2Projective::random(&mut rng).to_affine()
    }

    #[test]
    fn the_device_equations_agree_with_blst_on_points_in_and_out_of_the_subgroups() {
        let c = SubgroupConstants::new().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..64 {
            let inside = g1_in(&mut rng);
            assert!(c.g1_passes(&inside));
            let outside = g1_off_subgroup(&mut rng);
            assert!(!c.g1_passes(&outside), "a G1 point outside the subgroup passed");
            let inside = g2_in(&mut rng);
            assert!(c.g2_passes(&inside));
            let outside = g2_off_subgroup(&mut rng);
            assert!(!c.g2_passes(&outside), "a G2 point outside the subgroup passed");
        }
        // A point of the subgroup plus one outside it is outside.
        let mixed = (G1Projective::from(g1_in(&mut rng)) + G1Projective::from(g1_off_subgroup(&mut rng))).to_affine();
        assert!(!c.g1_passes(&mixed));
    }

    #[test]
    fn the_other_cube_root_and_unchecked_constants_fail() {
        let c = SubgroupConstants::new().unwrap();
        let beta = Fp::from_raw_unchecked(c.beta);
        // β² is the other primitive cube root of unity: it acts as [x² − 1], not [−x²].
        let other = SubgroupConstants { beta: limbs(beta.square()), ..c };
        assert!(!other.g1_passes(&G1Affine::generator()));
        // −c2 maps P to −ψ(P), so the sum is [2|x|]P.
        let c2 = Fp2::new(
            Fp::from_raw_unchecked(c.psi_y[..6].try_into().unwrap()),
            Fp::from_raw_unchecked(c.psi_y[6..].try_into().unwrap()),
        );
        assert!(!SubgroupConstants { psi_y: limbs2(-c2), ..c }.g2_passes(&G2Affine::generator()));
        assert_eq!((c.g1_bits, c.g2_bits), (128, 64));
    }
}
