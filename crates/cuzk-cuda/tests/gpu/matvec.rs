//! The matrices on the device: the mat-vec of a random R1CS bit for bit against the CPU's,
//! and a compact witness expanded there to the host's vector.

use super::*;

/// A random R1CS: random linear combinations over ONE, inputs and aux with coefficients
/// 1, -1, small and random, empty rows, duplicate terms, and rows of every length class the
/// device kernels split by (cuda/matvec.cu: ≤ 4 non-zeros a thread, ≤ 64 eight lanes, longer
/// a warp), at and either side of each boundary, up to one of 3000. Values are random
/// (unsatisfied): only the linear algebra is under test here.
struct RandomR1cs {
    seed: u64,
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl Circuit<Fr> for RandomR1cs {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut r = rng(self.seed);
        let mut vars = vec![CS::one()];
        for i in 0..self.inputs {
            let v = Fr::random(&mut r);
            vars.push(cs.alloc_input(|| format!("in{i}"), || Ok(v))?);
        }
        for i in 0..self.aux {
            let v = Fr::random(&mut r);
            vars.push(cs.alloc(|| format!("aux{i}"), || Ok(v))?);
        }
        let coeff = |r: &mut ChaCha8Rng| match r.next_u32() % 4 {
            0 => Fr::ONE,
            1 => -Fr::ONE,
            2 => Fr::from(r.next_u32() as u64 % 5 + 2),
            _ => Fr::random(&mut *r),
        };
        let lc = |r: &mut ChaCha8Rng, row: usize| -> LinearCombination<Fr> {
            const LONGER: [usize; 9] = [4, 5, 8, 33, 63, 64, 65, 100, 929];
            let terms = if row == 7 {
                3000
            } else if row.is_multiple_of(11) {
                0
            } else if row.is_multiple_of(13) {
                LONGER[(row / 13) % LONGER.len()]
            } else {
                1 + r.next_u32() as usize % 4
            };
            let mut l = LinearCombination::zero();
            for _ in 0..terms {
                let v: Variable = vars[r.next_u32() as usize % vars.len()];
                l = l + (coeff(r), v);
            }
            l
        };
        for i in 0..self.constraints {
            let (a, b, c) = (lc(&mut r, i), lc(&mut r, i + 1), lc(&mut r, i + 2));
            cs.enforce(|| format!("c{i}"), |_| a, |_| b, |_| c);
        }
        Ok(())
    }
}

#[test]
fn device_matvec_equals_cpu_matvec_bit_for_bit() {
    for (seed, inputs, aux, constraints) in
        [(1u64, 0usize, 5usize, 20usize), (2, 3, 1000, 3000), (3, 40, 20_000, 70_000)]
    {
        let circuit = || RandomR1cs { seed, inputs, aux, constraints };
        let pc = cuzk_pce::extract(circuit()).unwrap();
        let (ins, auxv) = cuzk_pce::witness(circuit()).unwrap();
        let want = cuzk_pce::evaluate(&pc, ins.clone(), auxv.clone()).unwrap();
        let d = Domain::for_size(pc.num_constraints).unwrap();
        let dpce = DevicePce::upload(DEV, &pc).unwrap();
        let w: Vec<Fr> = ins.iter().chain(auxv.iter()).copied().collect();
        let (wbuf, _) = DeviceBuffer::upload(DEV, &w).unwrap();
        let (abc, _) = dpce.eval(&d, &wbuf).unwrap();
        let got = abc.to_vec().unwrap();
        let m = pc.num_constraints;
        for (k, (name, v)) in [("a", &want.a), ("b", &want.b), ("c", &want.c)].into_iter().enumerate() {
            assert!(got[k * d.n..k * d.n + m] == v[..], "{name} differs (seed {seed})");
            assert!(got[k * d.n + m..(k + 1) * d.n].iter().all(|x| x.is_zero_vartime()), "{name} padding");
        }
        // The dense query scalars gathered on the device.
        let mut a_want = ins.clone();
        a_want.extend(dense_scalars(&auxv, &pc.a_aux_density));
        let mut b_want = dense_scalars(&ins, &pc.b_input_density);
        b_want.extend(dense_scalars(&auxv, &pc.b_aux_density));
        assert!(dpce.gather_a(&wbuf).unwrap().to_vec().unwrap() == a_want, "A query scalars");
        assert!(dpce.gather_b(&wbuf).unwrap().to_vec().unwrap() == b_want, "B query scalars");
        let (ai, bi) = query_indices(&pc);
        assert_eq!((ai.len(), bi.len()), dpce.query_lens());
    }
}

#[test]
fn compact_witness_expands_on_the_device_to_the_host_vector() {
    use cuzk_cuda::witness::{upload, WitnessRef};
    use cuzk_pce::CompactFrVec;
    let mut r = rng(11);
    // Lengths around the 32-value words; values mostly 0/1 as in real witnesses, some -1, 2
    // and random ones (stored in full), and runs of each so whole words are of one kind.
    for n in [0usize, 1, 31, 32, 33, 1000, 100_003] {
        let inputs = random_scalars(&mut r, 3);
        let aux: Vec<Fr> = (0..n)
            .map(|i| match (r.next_u32() % 10, (i / 64) % 4) {
                (_, 0) => Fr::ZERO,
                (_, 1) => Fr::ONE,
                (0..=3, _) => Fr::ZERO,
                (4..=7, _) => Fr::ONE,
                (8, _) => -Fr::ONE,
                _ => Fr::random(&mut r),
            })
            .collect();
        let compact = CompactFrVec::from_slice(&aux);
        let (buf, t) = upload(DEV, WitnessRef::Compact { inputs: &inputs, aux: &compact }).unwrap();
        let got = buf.to_vec().unwrap();
        assert!(got[..3] == inputs[..], "inputs (n={n})");
        assert!(got[3..] == aux[..], "aux expanded on the device (n={n})");
        assert!(t.expand_ms >= 0.0);
        let (full, _) = upload(DEV, WitnessRef::Full { inputs: &inputs, aux: &aux }).unwrap();
        assert!(full.to_vec().unwrap() == got, "both forms give the same device witness (n={n})");
    }
}
