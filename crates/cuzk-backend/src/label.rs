//! Whose partition a backend is proving, and how urgently: for status reports ("device 0 is on
//! job X") and for a shared device's order of work. Nothing here changes a proof.

/// How soon a partition must be proved. A backend that shares a device lets more urgent work
/// go first, at the next phase boundary of a less urgent partition in hand: deadline work
/// passes PoRep, and a WinningPoSt passes a WindowPoSt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Urgency {
    /// PoRep, SnapDeals, and anything below HIGH priority.
    #[default]
    Normal,
    /// Deadline work at HIGH priority (WindowPoSt: a missed deadline faults the sectors).
    High,
    /// Deadline work at CRITICAL priority (WinningPoSt: a late one loses the block reward).
    Critical,
}

/// Whose partition a backend is proving, for status reports, and how urgently.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkLabel {
    pub job_id: String,
    pub proof_kind: String,
    pub urgency: Urgency,
}
