//! Synthetic parameters: an in-memory [`Srs`] with exactly the sizes a circuit needs and
//! random points, for benchmarks at sizes whose real parameters are out of reach (the 32 GiB
//! PoRep file is 47 GiB). Proofs made with them are computed exactly as with real parameters
//! — same NTTs, same MSM sizes, same memory — but can never verify: nobody knows a trapdoor
//! that ties these points together. [`Srs::synthetic`] is always set on such parameters, and
//! the engine refuses to report their proofs as verified.
//!
//! Speed matters more than randomness quality: a 32 GiB circuit needs ~390 M G1 and ~33 M G2
//! points, and one scalar multiplication per point would take hours. So each vector gets a
//! pool of [`POOL`] distinct points (runs of additions from random starting points, normalised
//! in one batch), and the vector is filled by repeating the pool in parallel — seconds, bounded
//! by memory bandwidth. Repetition does not change the MSM work (Pippenger's cost depends on
//! the number of points and the scalars, not on which points they are).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::assignment::ProvingAssignment;
use crate::ntt::Domain;
use crate::srs::{Srs, SrsError, VerifyingKey};

/// Distinct points per vector; the rest repeat them.
pub const POOL: usize = 1 << 14;
/// Points per run of additions (one scalar multiplication starts each run).
const RUN: usize = 256;

/// The sizes of a circuit's parameters, from its constraint system's counts and densities —
/// what [`crate::prover::check_shape`] will demand of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrsShape {
    /// Rows of A, B, C: the circuit's constraints plus one per public input.
    pub num_constraints: usize,
    /// Public inputs including the constant ONE.
    pub num_inputs: usize,
    pub num_aux: usize,
    /// Aux variables that occur in A; inputs and aux variables that occur in B.
    pub a_aux: usize,
    pub b_inputs: usize,
    pub b_aux: usize,
}

impl SrsShape {
    /// The shape a synthesized assignment needs.
    pub fn of_assignment(w: &ProvingAssignment) -> Self {
        SrsShape {
            num_constraints: w.a.len(),
            num_inputs: w.input_assignment.len(),
            num_aux: w.aux_assignment.len(),
            a_aux: w.a_aux_density.count_ones(),
            b_inputs: w.b_input_density.count_ones(),
            b_aux: w.b_aux_density.count_ones(),
        }
    }

    /// FFT domain size (a power of two ≥ the number of constraints), if the field has one.
    pub fn domain_size(&self) -> Option<usize> {
        Domain::for_size(self.num_constraints).map(|d| d.n)
    }

    /// (h, l, a, b_g1 = b_g2, ic) lengths.
    pub fn lengths(&self) -> Option<[usize; 5]> {
        let n = self.domain_size()?;
        Some([n - 1, self.num_aux, self.num_inputs + self.a_aux, self.b_inputs + self.b_aux, self.num_inputs])
    }

    /// Bytes the decoded parameters take in memory (what [`Srs::resident_bytes`] will say).
    pub fn resident_bytes(&self) -> Option<u64> {
        let [h, l, a, b, ic] = self.lengths()?;
        let (g1, g2) = (std::mem::size_of::<G1Affine>() as u64, std::mem::size_of::<G2Affine>() as u64);
        Some(g1 * (h + l + a + b + ic) as u64 + g2 * b as u64)
    }
}

impl std::fmt::Display for SrsShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} constraints, {} inputs, {} aux, A aux {}, B inputs {}, B aux {}",
            self.num_constraints, self.num_inputs, self.num_aux, self.a_aux, self.b_inputs, self.b_aux
        )
    }
}

impl Srs {
    /// Random parameters of exactly `shape`, deterministic in `seed`. `label` names them in
    /// `path` (`synthetic://<label>?seed=<seed>`), so logs and status show what they are.
    pub fn synthetic(shape: &SrsShape, seed: u64, label: &str) -> Result<Srs, SrsError> {
        let path = format!("synthetic://{label}?seed={seed}").into();
        let Some([h, l, a, b, ic]) = shape.lengths() else {
            return Err(SrsError::Inconsistent {
                path,
                reason: format!("{} constraints exceed the largest FFT domain of the field", shape.num_constraints),
            });
        };
        // Every vector draws from its own pool (own seed), so e.g. A and L do not share points.
        let g1 = |tag: u64, len: usize| tile(&pool(seed, tag, g1_mul), len);
        let vk_points = pool(seed, 0, g1_mul);
        let vk_g2 = pool(seed, 1, g2_mul);
        let vk = VerifyingKey {
            alpha_g1: vk_points[0],
            beta_g1: vk_points[1],
            beta_g2: vk_g2[0],
            gamma_g2: vk_g2[1],
            delta_g1: vk_points[2],
            delta_g2: vk_g2[2],
            ic: tile(&vk_points[3..], ic),
        };
        Ok(Srs {
            vk,
            h: g1(2, h),
            l: g1(3, l),
            a: g1(4, a),
            b_g1: g1(5, b),
            b_g2: tile(&pool(seed, 6, g2_mul), b),
            path,
            synthetic: true,
            insecure: false,
            id: Srs::next_id(),
            released: None,
        })
    }
}

/// Name of the marker file written next to synthetic parameters on disk
/// (`<file>.params.SYNTHETIC`): [`Srs::load`] marks parameters that have one as synthetic.
pub fn synthetic_marker(params: &std::path::Path) -> std::path::PathBuf {
    let mut name = params.as_os_str().to_owned();
    name.push(".SYNTHETIC");
    name.into()
}

/// Write the parameters [`Srs::synthetic`] would build — the same points — as a bellperson
/// `.params` file, and its verifying key as a `.vk` file, streaming: memory stays at one pool
/// of points per vector, whatever the size (the 32 GiB PoRep file is 47 GiB). This is how
/// other provers (filecoin-proofs, SupraSeal) are benchmarked on the same synthetic input;
/// whoever writes such a file also writes [`synthetic_marker`] next to it.
///
/// Layout (bellperson's): the verifying key (α₁, β₁, β₂, γ₂, δ₁, δ₂ uncompressed, then the
/// IC count as a big-endian u32 and the IC points), then h, l, a, b_g1 (G1) and b_g2 (G2),
/// each a big-endian u32 count and uncompressed points. Returns the bytes of `.params`.
pub fn write_synthetic(
    shape: &SrsShape,
    seed: u64,
    params: &mut impl std::io::Write,
    vk: &mut impl std::io::Write,
) -> std::io::Result<u64> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    let Some([h, l, a, b, ic]) = shape.lengths() else {
        return Err(invalid(format!(
            "{} constraints exceed the largest FFT domain of the field",
            shape.num_constraints
        )));
    };
    let g1_bytes = |p: &[G1Affine]| p.iter().flat_map(|p| p.to_uncompressed()).collect::<Vec<u8>>();
    let g2_bytes = |p: &[G2Affine]| p.iter().flat_map(|p| p.to_uncompressed()).collect::<Vec<u8>>();
    let vk_points = pool(seed, 0, g1_mul);
    let vk_g2 = pool(seed, 1, g2_mul);
    let mut head = Vec::new();
    for point in [
        &vk_points[0].to_uncompressed()[..], // alpha_g1
        &vk_points[1].to_uncompressed()[..], // beta_g1
        &vk_g2[0].to_uncompressed()[..],     // beta_g2
        &vk_g2[1].to_uncompressed()[..],     // gamma_g2
        &vk_points[2].to_uncompressed()[..], // delta_g1
        &vk_g2[2].to_uncompressed()[..],     // delta_g2
    ] {
        head.extend_from_slice(point);
    }
    section(&mut head, &g1_bytes(&vk_points[3..]), 96, ic)?;
    vk.write_all(&head)?;
    params.write_all(&head)?;
    let mut written = head.len() as u64;
    for (tag, len) in [(2, h), (3, l), (4, a), (5, b)] {
        written += section(params, &g1_bytes(&pool(seed, tag, g1_mul)), 96, len)?;
    }
    written += section(params, &g2_bytes(&pool(seed, 6, g2_mul)), 192, b)?;
    Ok(written)
}

/// A count and `len` points: the serialised pool repeated, as [`tile`] repeats it.
fn section(out: &mut impl std::io::Write, pool: &[u8], point: usize, len: usize) -> std::io::Result<u64> {
    let count = u32::try_from(len).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{len} points overflow a u32 count"))
    })?;
    out.write_all(&count.to_be_bytes())?;
    let mut left = len * point;
    while left > 0 {
        let n = left.min(pool.len());
        out.write_all(&pool[..n])?;
        left -= n;
    }
    Ok(4 + (len * point) as u64)
}

fn g1_mul(s: Fr) -> G1Projective {
    G1Projective::generator() * s
}

fn g2_mul(s: Fr) -> G2Projective {
    G2Projective::generator() * s
}

/// POOL distinct affine points: runs of P, P+Q, P+2Q, … with P and Q random multiples of the
/// generator, one RNG per run so the result does not depend on thread scheduling.
fn pool<P>(seed: u64, tag: u64, mul: fn(Fr) -> P) -> Vec<P::AffineRepr>
where
    P: Curve + Group<Scalar = Fr> + Send + Sync,
    P::AffineRepr: Copy + Default + Send + Sync + PrimeCurveAffine,
{
    let projective: Vec<P> = (0..POOL / RUN)
        .into_par_iter()
        .flat_map_iter(|run| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(tag << 32 | run as u64);
            let step = mul(Fr::random(&mut rng));
            std::iter::successors(Some(mul(Fr::random(&mut rng))), move |p| Some(*p + step)).take(RUN)
        })
        .collect();
    let mut affine = vec![P::AffineRepr::default(); projective.len()];
    P::batch_normalize(&projective, &mut affine);
    debug_assert!(affine.iter().all(|p| !bool::from(p.is_identity())));
    affine
}

/// `len` points: the pool repeated, written in parallel straight into the new vector.
fn tile<T: Copy + Send + Sync>(pool: &[T], len: usize) -> Vec<T> {
    let mut out = Vec::new();
    (0..len).into_par_iter().map(|i| pool[i % pool.len()]).collect_into_vec(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> SrsShape {
        SrsShape { num_constraints: 1000, num_inputs: 3, num_aux: 700, a_aux: 650, b_inputs: 1, b_aux: 300 }
    }

    #[test]
    fn written_file_loads_as_the_same_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let (params, vk) = (dir.path().join("p.params"), dir.path().join("p.vk"));
        let (mut pf, mut vf) = (std::fs::File::create(&params).unwrap(), std::fs::File::create(&vk).unwrap());
        let n = write_synthetic(&shape(), 9, &mut pf, &mut vf).unwrap();
        drop((pf, vf));
        assert_eq!(n, std::fs::metadata(&params).unwrap().len());
        let mem = Srs::synthetic(&shape(), 9, "t").unwrap();
        let disk = Srs::load(&params, crate::srs::SubgroupCheck::Always).unwrap();
        assert_eq!((disk.h, disk.l, disk.a), (mem.h, mem.l, mem.a));
        assert_eq!((disk.b_g1, disk.b_g2), (mem.b_g1, mem.b_g2));
        assert_eq!(disk.vk, mem.vk);
        assert_eq!(crate::srs::load_verifying_key(&vk).unwrap(), mem.vk);
        // Without the marker the loader cannot know; with it, the parameters say what they are.
        assert!(!disk.synthetic);
        std::fs::write(synthetic_marker(&params), "synthetic").unwrap();
        assert!(Srs::load(&params, crate::srs::SubgroupCheck::Skip).unwrap().synthetic);
    }

    #[test]
    fn sizes_are_exactly_the_shapes() {
        let srs = Srs::synthetic(&shape(), 1, "test").unwrap();
        assert!(srs.synthetic);
        assert_eq!(srs.path.to_str(), Some("synthetic://test?seed=1"));
        assert_eq!((srs.h.len(), srs.l.len(), srs.a.len()), (1023, 700, 653));
        assert_eq!((srs.b_g1.len(), srs.b_g2.len(), srs.vk.ic.len()), (301, 301, 3));
        assert_eq!(Some(srs.resident_bytes()), shape().resident_bytes());
    }

    #[test]
    fn deterministic_in_the_seed_and_points_are_valid() {
        let a = Srs::synthetic(&shape(), 5, "t").unwrap();
        let b = Srs::synthetic(&shape(), 5, "t").unwrap();
        let c = Srs::synthetic(&shape(), 6, "t").unwrap();
        assert!(a.h == b.h && a.b_g2 == b.b_g2 && a.vk == b.vk);
        assert!(a.h != c.h && a.vk != c.vk);
        // On the curve, in the subgroup, never at infinity; vectors do not share points.
        for p in a.h.iter().chain(&a.l).chain(&a.a).chain(&a.b_g1) {
            assert!(bool::from(p.is_on_curve()) && bool::from(p.is_torsion_free()) && !bool::from(p.is_identity()));
        }
        assert!(a.b_g2.iter().all(|p| bool::from(p.is_torsion_free()) && !bool::from(p.is_identity())));
        assert_ne!(a.h[0], a.l[0]);
        let distinct: std::collections::HashSet<Vec<u8>> =
            pool(9, 2, g1_mul).iter().map(|p| p.to_compressed().to_vec()).collect();
        assert_eq!(distinct.len(), POOL);
    }
}
