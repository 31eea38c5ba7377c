//! A partition's witness as it reaches a prover, in one of three forms, and the one definition
//! of how it changes form ([`Witness::into_accepted`]).
//!
//! From the least host memory to the most (one 32 GiB PoRep partition):
//! * **compact** (~90 MB): the witness with its aux values stored 2 bits a value for 0 and 1,
//!   beside the circuit's pre-compiled matrices; how a PCE partition waits for a prover;
//! * **expanded** (~4.2 GB): the witness in full, a, b, c still to be evaluated from the
//!   matrices (by a backend that evaluates them on its device);
//! * **assignment** (~16 GB): a, b, c evaluated on the host; what every backend proves.
//!
//! The engine converts a witness once, to the first form up this list that the backend takes
//! ([`ProverBackend::accepts`](crate::ProverBackend::accepts)); a backend proves the form it
//! is given, and says so with an error if it was given one it does not take.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_groth16::prover::{check_shape, check_sizes, Shape};
use cuzk_groth16::{Fr, ProveError, ProvingAssignment, Srs};
use cuzk_pce::{CompactFrVec, PceError, PreCompiled};

/// One partition's witness, in the form it is in now.
pub enum Witness {
    /// a, b, c evaluated, with the witness and its densities: plain synthesis, or a PCE
    /// witness evaluated on the host.
    Assignment(ProvingAssignment),
    /// The witness and its densities with a, b, c empty, and the matrices that give them.
    Expanded { witness: ProvingAssignment, matrices: Arc<PreCompiled> },
    /// The witness with its aux values compact, and its matrices.
    Compact { inputs: Vec<Fr>, aux: CompactFrVec, matrices: Arc<PreCompiled> },
}

/// The three forms, in the order a witness moves through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WitnessForm {
    Compact,
    Expanded,
    Assignment,
}

impl std::fmt::Display for WitnessForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WitnessForm::Compact => "compact",
            WitnessForm::Expanded => "expanded",
            WitnessForm::Assignment => "assignment",
        })
    }
}

/// The forms a backend proves from. Every backend takes an assignment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forms {
    /// An expanded witness: the backend evaluates a, b, c from the matrices itself.
    pub expanded: bool,
    /// A compact witness: the backend also expands it itself (on its device), so the full
    /// aux vector never exists on the host.
    pub compact: bool,
}

impl Forms {
    /// An assignment and nothing else (the CPU backend).
    pub const ASSIGNMENT: Forms = Forms { expanded: false, compact: false };

    pub fn takes(self, form: WitnessForm) -> bool {
        match form {
            WitnessForm::Compact => self.compact,
            WitnessForm::Expanded => self.expanded,
            WitnessForm::Assignment => true,
        }
    }

    /// The form a witness now in `form` reaches the backend in: the first one from `form`
    /// on that it takes.
    pub fn reached_from(self, form: WitnessForm) -> WitnessForm {
        match form {
            WitnessForm::Compact if self.compact => WitnessForm::Compact,
            WitnessForm::Compact | WitnessForm::Expanded if self.expanded => WitnessForm::Expanded,
            _ => WitnessForm::Assignment,
        }
    }
}

/// What changing form cost, for the proof's timings.
#[derive(Clone, Copy, Debug, Default)]
pub struct FormChange {
    /// Compact → expanded.
    pub witness_expand: Duration,
    /// Expanded → assignment: a, b, c evaluated on the host.
    pub matvec: Duration,
}

impl Witness {
    pub fn form(&self) -> WitnessForm {
        match self {
            Witness::Assignment(_) => WitnessForm::Assignment,
            Witness::Expanded { .. } => WitnessForm::Expanded,
            Witness::Compact { .. } => WitnessForm::Compact,
        }
    }

    /// The public inputs, the constant ONE first.
    pub fn inputs(&self) -> &[Fr] {
        match self {
            Witness::Assignment(w) | Witness::Expanded { witness: w, .. } => &w.input_assignment,
            Witness::Compact { inputs, .. } => inputs,
        }
    }

    /// Constraints of the circuit (input rows included).
    pub fn num_constraints(&self) -> usize {
        match self {
            Witness::Assignment(w) => w.num_constraints(),
            Witness::Expanded { matrices, .. } | Witness::Compact { matrices, .. } => matrices.num_constraints,
        }
    }

    /// Heap bytes it holds (a, b, c and the witness dominate).
    pub fn heap_bytes(&self) -> u64 {
        let full = |w: &ProvingAssignment| {
            (32 * (w.a.len() + w.b.len() + w.c.len() + w.input_assignment.len() + w.aux_assignment.len())) as u64
        };
        match self {
            Witness::Assignment(w) | Witness::Expanded { witness: w, .. } => full(w),
            Witness::Compact { inputs, aux, .. } => 32 * inputs.len() as u64 + aux.heap_bytes(),
        }
    }

    /// Check that the witness and `srs` belong together, and return the sizes a proof has. A
    /// witness with matrices is checked against them, and they against the parameters.
    pub fn shape(&self, srs: &Srs) -> Result<Shape, ProveError> {
        let (pc, n_in, n_aux) = match self {
            Witness::Assignment(w) => return check_shape(srs, w),
            Witness::Expanded { witness, matrices } => {
                (matrices, witness.input_assignment.len(), witness.aux_assignment.len())
            }
            Witness::Compact { inputs, aux, matrices } => (matrices, inputs.len(), aux.len()),
        };
        if n_in != pc.num_inputs || n_aux != pc.num_aux {
            return Err(ProveError::ShapeMismatch(format!(
                "witness has {n_in} inputs and {n_aux} aux, the matrices {} and {}",
                pc.num_inputs, pc.num_aux
            )));
        }
        check_sizes(
            srs,
            pc.num_constraints,
            pc.num_inputs,
            pc.num_aux,
            pc.a_aux_density.count_ones(),
            pc.b_input_density.count_ones(),
            pc.b_aux_density.count_ones(),
        )
    }

    /// The witness in the first form from its own on that `forms` takes: expanded on the host
    /// and, if the backend does not evaluate matrices, a, b, c evaluated on the host too.
    pub fn into_accepted(self, forms: Forms) -> Result<(Witness, FormChange), PceError> {
        let target = forms.reached_from(self.form());
        let mut change = FormChange::default();
        let (inputs, aux, matrices) = match self {
            Witness::Compact { inputs, aux, matrices } if target != WitnessForm::Compact => {
                let started = Instant::now();
                let aux = aux.to_vec();
                change.witness_expand = started.elapsed();
                (inputs, aux, matrices)
            }
            Witness::Expanded { witness, matrices } if target == WitnessForm::Assignment => {
                (witness.input_assignment, witness.aux_assignment, matrices)
            }
            taken => return Ok((taken, change)),
        };
        let witness = if target == WitnessForm::Assignment {
            let started = Instant::now();
            let w = cuzk_pce::evaluate(&matrices, inputs, aux)?;
            change.matvec = started.elapsed();
            Witness::Assignment(w)
        } else {
            Witness::Expanded { witness: cuzk_pce::witness_assignment(&matrices, inputs, aux)?, matrices }
        };
        Ok((witness, change))
    }

    /// The assignment, a, b, c evaluated on the host (a GPU backend's retry on the CPU).
    pub fn into_assignment(self) -> Result<ProvingAssignment, PceError> {
        match self {
            Witness::Assignment(w) => Ok(w),
            Witness::Expanded { witness, matrices } => {
                cuzk_pce::evaluate(&matrices, witness.input_assignment, witness.aux_assignment)
            }
            Witness::Compact { inputs, aux, matrices } => cuzk_pce::evaluate(&matrices, inputs, aux.to_vec()),
        }
    }

    /// The error a backend returns for a form it does not take (the engine converts a
    /// witness before proving it, so this is a bug in the caller, not bad input).
    pub fn not_taken_by(&self, backend: String) -> ProveError {
        ProveError::Backend { message: format!("{backend} does not prove from a {} witness", self.form()), backend }
    }
}
