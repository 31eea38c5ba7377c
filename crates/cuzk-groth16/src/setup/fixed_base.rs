//! Many scalar multiplications of one fixed base point (the generator), for the setup.
//!
//! A Groth16 setup multiplies the generator by hundreds of millions of scalars (≈ 430 M in
//! G1 and 33 M in G2 for a 32 GiB PoRep circuit). Two standard techniques make that cheap:
//!
//! * **Window tables with signed digits.** The scalar is cut into `c`-bit windows recoded to
//!   digits in [−2^(c−1), 2^(c−1)]; the table holds d·2^(c·k)·G for every window k and
//!   d = 1 … 2^(c−1), so a multiplication is one table point per window, added up (a digit's
//!   sign only negates y). No doublings at all.
//! * **Affine additions in batches.** An affine addition costs one field inversion, and one
//!   inversion can be shared by a whole batch (Montgomery's trick: three multiplications per
//!   element instead of an inversion each), so a batch of accumulators advances one window at
//!   a time with ~6 multiplications per addition instead of the ~11 of a mixed Jacobian
//!   addition, and the results come out affine, with no final normalisation.
//!
//! The rare cases an affine addition cannot take (equal x: a doubling or a sum at infinity)
//! go through the curve's own projective arithmetic, so every result is exact.

use std::ops::Add;

use blst::{blst_fp, blst_fp2, blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// Accumulators advanced together (one shared inversion per window step).
const BATCH: usize = 512;

/// Field arithmetic the batched additions need. blstrs keeps its coordinate fields private,
/// so the coordinates are blst's own types, through blst's functions.
pub trait Coordinate: Copy + PartialEq + Send + Sync {
    fn add(&self, o: &Self) -> Self;
    fn sub(&self, o: &Self) -> Self;
    fn mul(&self, o: &Self) -> Self;
    fn square(&self) -> Self;
    fn neg(&self) -> Self;
    /// The inverse; callers never pass zero.
    fn inverse(&self) -> Self;
}

macro_rules! blst_coordinate {
    ($t:ty, $add:ident, $sub:ident, $mul:ident, $sqr:ident, $cneg:ident, $inv:ident) => {
        impl Coordinate for $t {
            fn add(&self, o: &Self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: blst reads two field elements and writes one; all are valid locals.
                unsafe { blst::$add(&mut r, self, o) };
                r
            }
            fn sub(&self, o: &Self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: as above.
                unsafe { blst::$sub(&mut r, self, o) };
                r
            }
            fn mul(&self, o: &Self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: as above.
                unsafe { blst::$mul(&mut r, self, o) };
                r
            }
            fn square(&self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: as above.
                unsafe { blst::$sqr(&mut r, self) };
                r
            }
            fn neg(&self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: as above.
                unsafe { blst::$cneg(&mut r, self, true) };
                r
            }
            fn inverse(&self) -> Self {
                let mut r = <$t>::default();
                // SAFETY: as above.
                unsafe { blst::$inv(&mut r, self) };
                r
            }
        }
    };
}

blst_coordinate!(blst_fp, blst_fp_add, blst_fp_sub, blst_fp_mul, blst_fp_sqr, blst_fp_cneg, blst_fp_inverse);
blst_coordinate!(blst_fp2, blst_fp2_add, blst_fp2_sub, blst_fp2_mul, blst_fp2_sqr, blst_fp2_cneg, blst_fp2_inverse);

impl Coordinate for Fr {
    fn add(&self, o: &Self) -> Self {
        self + o
    }
    fn sub(&self, o: &Self) -> Self {
        self - o
    }
    fn mul(&self, o: &Self) -> Self {
        self * o
    }
    fn square(&self) -> Self {
        Field::square(self)
    }
    fn neg(&self) -> Self {
        -self
    }
    fn inverse(&self) -> Self {
        self.invert().expect("callers never invert zero")
    }
}

/// A curve group as the batched affine arithmetic needs it.
pub trait FixedBaseCurve: Send + Sync + 'static {
    /// The coordinate field (Fp for G1, Fp2 for G2).
    type F: Coordinate;
    type Affine: PrimeCurveAffine<Curve = Self::Projective> + Copy + Send + Sync + Default;
    type Projective: Group<Scalar = Fr>
        + Curve<AffineRepr = Self::Affine>
        + Add<Self::Affine, Output = Self::Projective>;
    fn coordinates(p: &Self::Affine) -> (Self::F, Self::F);
    fn from_coordinates(x: Self::F, y: Self::F) -> Self::Affine;
}

pub enum G1 {}
pub enum G2 {}

impl FixedBaseCurve for G1 {
    type F = blst_fp;
    type Affine = G1Affine;
    type Projective = G1Projective;
    fn coordinates(p: &G1Affine) -> (blst_fp, blst_fp) {
        let raw: &blst_p1_affine = p.as_ref();
        (raw.x, raw.y)
    }
    fn from_coordinates(x: blst_fp, y: blst_fp) -> G1Affine {
        let mut p = G1Affine::default();
        *p.as_mut() = blst_p1_affine { x, y };
        p
    }
}

impl FixedBaseCurve for G2 {
    type F = blst_fp2;
    type Affine = G2Affine;
    type Projective = G2Projective;
    fn coordinates(p: &G2Affine) -> (blst_fp2, blst_fp2) {
        let raw: &blst_p2_affine = p.as_ref();
        (raw.x, raw.y)
    }
    fn from_coordinates(x: blst_fp2, y: blst_fp2) -> G2Affine {
        let mut p = G2Affine::default();
        *p.as_mut() = blst_p2_affine { x, y };
        p
    }
}

/// Precomputed multiples of the generator of `C`, for [`FixedBase::mul_many`].
pub struct FixedBase<C: FixedBaseCurve> {
    window: usize,
    windows: usize,
    /// `table[k * half + d - 1]` = d · 2^(window·k) · G, affine, d in 1..=half.
    table: Vec<(C::F, C::F)>,
}

impl<C: FixedBaseCurve> FixedBase<C> {
    /// Tables for `window`-bit windows (2..=16). Costs `windows · 2^(window−1)` additions.
    pub fn new(window: usize) -> Self {
        assert!((2..=16).contains(&window), "window {window} out of range");
        // Enough windows that the top digit never carries out: 256 bits > any scalar's 255.
        let windows = 256usize.div_ceil(window);
        let half = 1usize << (window - 1);
        let projective: Vec<C::Projective> = (0..windows)
            .into_par_iter()
            .flat_map_iter(|k| {
                let mut base = C::Projective::generator();
                for _ in 0..window * k {
                    base = base.double();
                }
                std::iter::successors(Some(base), move |p| Some(*p + base)).take(half)
            })
            .collect();
        let mut affine = vec![C::Affine::default(); projective.len()];
        C::Projective::batch_normalize(&projective, &mut affine);
        let table = affine.iter().map(C::coordinates).collect();
        FixedBase { window, windows, table }
    }

    pub fn window(&self) -> usize {
        self.window
    }

    /// The table as affine points, window by window (what a device implementation uploads).
    pub fn table(&self) -> Vec<C::Affine> {
        self.table.iter().map(|&(x, y)| C::from_coordinates(x, y)).collect()
    }

    /// `scalars[i] · G` for every i, in parallel, into affine points.
    pub fn mul_many(&self, scalars: &[Fr]) -> Vec<C::Affine> {
        let mut out = vec![C::Affine::default(); scalars.len()];
        out.par_chunks_mut(BATCH)
            .zip(scalars.par_chunks(BATCH))
            .for_each(|(out, scalars)| self.mul_batch(scalars, out));
        out
    }

    /// One batch in lockstep: every accumulator takes its window-k point, then k+1, …
    fn mul_batch(&self, scalars: &[Fr], out: &mut [C::Affine]) {
        let n = scalars.len();
        let digits: Vec<i32> = scalars.iter().flat_map(|s| signed_digits(s, self.window, self.windows)).collect();
        let half = 1usize << (self.window - 1);
        // Accumulator i: None = the point at infinity.
        let mut acc: Vec<Option<(C::F, C::F)>> = vec![None; n];
        let mut pending: Vec<(usize, C::F, C::F)> = Vec::with_capacity(n);
        let mut denominators: Vec<C::F> = Vec::with_capacity(n);
        let mut scratch: Vec<C::F> = Vec::with_capacity(n);
        for k in 0..self.windows {
            pending.clear();
            denominators.clear();
            for i in 0..n {
                let d = digits[i * self.windows + k];
                if d == 0 {
                    continue;
                }
                let (qx, qy) = self.table[k * half + d.unsigned_abs() as usize - 1];
                let qy = if d < 0 { qy.neg() } else { qy };
                match acc[i] {
                    None => acc[i] = Some((qx, qy)),
                    Some((px, py)) if px == qx => acc[i] = slow_add::<C>((px, py), (qx, qy)),
                    Some((px, _)) => {
                        pending.push((i, qx, qy));
                        denominators.push(qx.sub(&px));
                    }
                }
            }
            batch_invert(&mut denominators, &mut scratch);
            for (&(i, qx, qy), inv) in pending.iter().zip(&denominators) {
                let (px, py) = acc[i].expect("pending additions have a finite accumulator");
                let lambda = qy.sub(&py).mul(inv);
                let x = lambda.square().sub(&px).sub(&qx);
                let y = lambda.mul(&px.sub(&x)).sub(&py);
                acc[i] = Some((x, y));
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = match a {
                Some((x, y)) => C::from_coordinates(x, y),
                None => C::Affine::identity(),
            };
        }
    }
}

/// P + Q when x_P = x_Q (a doubling, or the point at infinity), through projective arithmetic.
fn slow_add<C: FixedBaseCurve>(p: (C::F, C::F), q: (C::F, C::F)) -> Option<(C::F, C::F)> {
    let sum = (C::from_coordinates(p.0, p.1).to_curve() + C::from_coordinates(q.0, q.1)).to_affine();
    (!bool::from(sum.is_identity())).then(|| C::coordinates(&sum))
}

/// Replace each element by its inverse with one field inversion (Montgomery's trick). Every
/// element must be non-zero (callers only pass x_Q − x_P with x_Q ≠ x_P, or τ − ωʲ).
pub(crate) fn batch_invert<F: Coordinate>(v: &mut [F], prefix: &mut Vec<F>) {
    let Some(&first) = v.first() else { return };
    prefix.clear();
    prefix.push(first);
    for x in &v[1..] {
        let p = prefix.last().expect("non-empty").mul(x);
        prefix.push(p);
    }
    let mut inv = prefix.last().expect("non-empty").inverse();
    for i in (1..v.len()).rev() {
        let x_inv = inv.mul(&prefix[i - 1]);
        inv = inv.mul(&v[i]);
        v[i] = x_inv;
    }
    v[0] = inv;
}

/// The scalar in `windows` signed digits of `window` bits, least significant first:
/// Σ dₖ·2^(window·k) = s with |dₖ| ≤ 2^(window−1).
fn signed_digits(s: &Fr, window: usize, windows: usize) -> impl Iterator<Item = i32> {
    let bytes = s.to_bytes_le();
    let bit = move |i: usize| if i < 256 { (bytes[i / 8] >> (i % 8)) as i32 & 1 } else { 0 };
    let half = 1i32 << (window - 1);
    let mut carry = 0;
    (0..windows).map(move |k| {
        let raw: i32 = (0..window).map(|j| bit(k * window + j) << j).sum::<i32>() + carry;
        if raw > half {
            carry = 1;
            raw - (1 << window)
        } else {
            carry = 0;
            raw
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn scalars() -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let mut s: Vec<Fr> = (0..1500).map(|_| Fr::random(&mut rng)).collect();
        // Edge cases: zero, one, −1, small values, powers of two, a batch boundary.
        s.extend([Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2), Fr::from(3), Fr::from(1 << 20), -Fr::from(7)]);
        s.extend((0..255).map(|i| Fr::from(2).pow_vartime([i])));
        s
    }

    fn check<C: FixedBaseCurve>(window: usize) {
        let fb = FixedBase::<C>::new(window);
        let s = scalars();
        let got = fb.mul_many(&s);
        for (s, p) in s.iter().zip(&got) {
            assert!(*p == (C::Projective::generator() * s).to_affine(), "window {window}, scalar {s:?}");
        }
    }

    #[test]
    fn g1_equals_plain_multiplication() {
        for w in [2, 5, 8, 11] {
            check::<G1>(w);
        }
    }

    #[test]
    fn g2_equals_plain_multiplication() {
        check::<G2>(9);
    }

    #[test]
    fn equal_x_cases_are_exact() {
        // Two table points with equal x only meet when the digit sums collide modulo the group
        // order, which random scalars never hit: test the path itself.
        let c = G1::coordinates(&G1Affine::generator());
        let doubled = slow_add::<G1>(c, c).unwrap();
        assert!(G1::from_coordinates(doubled.0, doubled.1) == G1Projective::generator().double().to_affine());
        assert!(slow_add::<G1>(c, (c.0, Coordinate::neg(&c.1))).is_none());
        assert!(FixedBase::<G1>::new(4).mul_many(&[Fr::ZERO])[0] == G1Affine::identity());
    }

    #[test]
    fn digits_recompose_the_scalar() {
        for s in scalars().iter().take(200) {
            for w in [3, 8, 12, 16] {
                let windows = 256usize.div_ceil(w);
                let mut acc = Fr::ZERO;
                let mut pow = Fr::ONE;
                let shift = Fr::from(2).pow_vartime([w as u64]);
                for d in signed_digits(s, w, windows) {
                    assert!(d.unsigned_abs() <= 1 << (w - 1));
                    let term = Fr::from(d.unsigned_abs() as u64) * pow;
                    acc += if d < 0 { -term } else { term };
                    pow *= shift;
                }
                assert_eq!(acc, *s);
            }
        }
    }
}
