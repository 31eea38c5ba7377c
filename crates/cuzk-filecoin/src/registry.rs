//! Registered proofs: the mapping from what a client sends (proof kind, Filecoin's Go `abi`
//! registered-proof number, sector size) to filecoin-proofs-api's enums and to cuzk's circuit ids.
//!
//! Go's numbering is the wire contract (see `shared/notes/wire-api.md`); filecoin-proofs-api's
//! Rust enums happen to list their variants in the same order, which we rely on *and test*.

use std::fmt;

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::error::InputError;

/// The four kinds of SNARK cuzk proves. Numbers are the wire enum's (`cuzk.v1.ProofKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    PoRepSealCommit = 1,
    SnapDealsUpdate = 2,
    WindowPostPartition = 3,
    WinningPost = 4,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition,
        ProofKind::WinningPost,
    ];

    pub fn from_wire(v: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as i32 == v)
    }

    /// Short stable name used in metrics labels, logs and status output.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::PoRepSealCommit => "porep",
            ProofKind::SnapDealsUpdate => "snap",
            ProofKind::WindowPostPartition => "wpost",
            ProofKind::WinningPost => "winning",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The sector sizes Filecoin's registered proofs define.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectorSize {
    S2KiB,
    S8MiB,
    S512MiB,
    S32GiB,
    S64GiB,
}

impl SectorSize {
    pub const ALL: [SectorSize; 5] =
        [SectorSize::S2KiB, SectorSize::S8MiB, SectorSize::S512MiB, SectorSize::S32GiB, SectorSize::S64GiB];

    pub fn bytes(self) -> u64 {
        match self {
            SectorSize::S2KiB => 2 << 10,
            SectorSize::S8MiB => 8 << 20,
            SectorSize::S512MiB => 512 << 20,
            SectorSize::S32GiB => 32 << 30,
            SectorSize::S64GiB => 64 << 30,
        }
    }

    pub fn from_bytes(bytes: u64) -> Result<Self, InputError> {
        Self::ALL.into_iter().find(|s| s.bytes() == bytes).ok_or(InputError::UnsupportedSectorSize(bytes))
    }

    /// Index within each size group of the registered-proof enums (2 KiB = 0 … 64 GiB = 4).
    fn index(self) -> u64 {
        self as u64
    }

    fn from_index(i: u64) -> Self {
        Self::ALL[i as usize]
    }

    /// Suffix used in circuit ids: `2k`, `8m`, `512m`, `32g`, `64g`.
    pub fn short(self) -> &'static str {
        match self {
            SectorSize::S2KiB => "2k",
            SectorSize::S8MiB => "8m",
            SectorSize::S512MiB => "512m",
            SectorSize::S32GiB => "32g",
            SectorSize::S64GiB => "64g",
        }
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SectorSize::S2KiB => "2KiB",
            SectorSize::S8MiB => "8MiB",
            SectorSize::S512MiB => "512MiB",
            SectorSize::S32GiB => "32GiB",
            SectorSize::S64GiB => "64GiB",
        })
    }
}

/// A fully resolved registered proof: which circuit family, which sector size, and the
/// filecoin-proofs-api value that carries the version/feature details.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Registered {
    Seal(RegisteredSealProof),
    Winning(RegisteredPoStProof),
    Window(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

impl Registered {
    /// Resolve a client's `(kind, registered_proof)` pair. `registered_proof` is the Go `abi`
    /// number. When `sector_size` is non-zero it must agree with the registered proof.
    pub fn resolve(kind: ProofKind, registered_proof: u64, sector_size: u64) -> Result<Self, InputError> {
        let unknown = || InputError::UnknownRegisteredProof { kind, number: registered_proof };
        let group = registered_proof / 5;
        let size = SectorSize::from_index(registered_proof % 5);
        let resolved = match kind {
            ProofKind::PoRepSealCommit => {
                use RegisteredSealProof::*;
                let table: [[RegisteredSealProof; 5]; 4] = [
                    [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1],
                    [
                        StackedDrg2KiBV1_1,
                        StackedDrg8MiBV1_1,
                        StackedDrg512MiBV1_1,
                        StackedDrg32GiBV1_1,
                        StackedDrg64GiBV1_1,
                    ],
                    [
                        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
                        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
                        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
                        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
                        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
                    ],
                    [
                        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
                        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
                        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
                        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
                        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
                    ],
                ];
                let p =
                    *table.get(group as usize).ok_or_else(unknown)?.get(size.index() as usize).ok_or_else(unknown)?;
                if group == 3 {
                    // NI-PoRep output is a SnarkPack aggregate of many partition proofs; we do
                    // not aggregate (yet), and returning plain partition proofs would be wrong.
                    return Err(InputError::Unsupported(format!(
                        "registered seal proof {registered_proof} ({p:?}) is non-interactive PoRep, which needs proof aggregation; cuzk does not support it"
                    )));
                }
                Registered::Seal(p)
            }
            ProofKind::WinningPost | ProofKind::WindowPostPartition => {
                use RegisteredPoStProof::*;
                let table: [[RegisteredPoStProof; 5]; 3] = [
                    [
                        StackedDrgWinning2KiBV1,
                        StackedDrgWinning8MiBV1,
                        StackedDrgWinning512MiBV1,
                        StackedDrgWinning32GiBV1,
                        StackedDrgWinning64GiBV1,
                    ],
                    [
                        StackedDrgWindow2KiBV1,
                        StackedDrgWindow8MiBV1,
                        StackedDrgWindow512MiBV1,
                        StackedDrgWindow32GiBV1,
                        StackedDrgWindow64GiBV1,
                    ],
                    [
                        StackedDrgWindow2KiBV1_2,
                        StackedDrgWindow8MiBV1_2,
                        StackedDrgWindow512MiBV1_2,
                        StackedDrgWindow32GiBV1_2,
                        StackedDrgWindow64GiBV1_2,
                    ],
                ];
                let p =
                    *table.get(group as usize).ok_or_else(unknown)?.get(size.index() as usize).ok_or_else(unknown)?;
                match (kind, group) {
                    (ProofKind::WinningPost, 0) => Registered::Winning(p),
                    (ProofKind::WindowPostPartition, 1 | 2) => Registered::Window(p),
                    _ => {
                        return Err(InputError::WrongKindForProof {
                            kind,
                            number: registered_proof,
                            actual: format!("{p:?}"),
                        })
                    }
                }
            }
            ProofKind::SnapDealsUpdate => {
                use RegisteredUpdateProof::*;
                let table =
                    [StackedDrg2KiBV1, StackedDrg8MiBV1, StackedDrg512MiBV1, StackedDrg32GiBV1, StackedDrg64GiBV1];
                if group != 0 {
                    return Err(unknown());
                }
                Registered::Update(table[size.index() as usize])
            }
        };
        if sector_size != 0 && sector_size != size.bytes() {
            return Err(InputError::SectorSizeMismatch {
                registered: format!("{:?}", resolved.api_name()),
                expected: size.bytes(),
                got: sector_size,
            });
        }
        Ok(resolved)
    }

    pub fn kind(&self) -> ProofKind {
        match self {
            Registered::Seal(_) => ProofKind::PoRepSealCommit,
            Registered::Winning(_) => ProofKind::WinningPost,
            Registered::Window(_) => ProofKind::WindowPostPartition,
            Registered::Update(_) => ProofKind::SnapDealsUpdate,
        }
    }

    pub fn sector_size(&self) -> SectorSize {
        let bytes = match self {
            Registered::Seal(p) => u64::from(p.sector_size()),
            Registered::Winning(p) | Registered::Window(p) => u64::from(p.sector_size()),
            Registered::Update(p) => u64::from(p.sector_size()),
        };
        SectorSize::from_bytes(bytes).expect("registered proofs only use known sector sizes")
    }

    /// The filecoin-proofs-api enum variant name (what C1 JSON carries).
    pub fn api_name(&self) -> String {
        match self {
            Registered::Seal(p) => format!("{p:?}"),
            Registered::Winning(p) | Registered::Window(p) => format!("{p:?}"),
            Registered::Update(p) => format!("{p:?}"),
        }
    }

    /// Number of SNARK partitions one proof of this type has.
    pub fn partitions(&self) -> usize {
        match self {
            Registered::Seal(p) => p.partitions() as usize,
            Registered::Winning(_) | Registered::Window(_) => 1,
            Registered::Update(p) => storage_proofs_update::constants::partition_count(p.sector_size().0 as usize / 32),
        }
    }

    /// The circuit id clients use for PreloadSRS/EvictSRS (`porep-32g`, `winning-2k`, …).
    pub fn circuit_id(&self) -> CircuitId {
        CircuitId { kind: self.kind(), size: self.sector_size() }
    }
}

/// Identifies one Groth16 circuit (and so one parameter file): proof family + sector size.
///
/// All versions of a family share a circuit shape and parameter file, so the version is not
/// part of the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CircuitId {
    pub kind: ProofKind,
    pub size: SectorSize,
}

impl CircuitId {
    pub fn parse(s: &str) -> Result<Self, InputError> {
        let bad = || InputError::UnknownCircuitId(s.to_string());
        let (family, size) = s.split_once('-').ok_or_else(bad)?;
        let kind = ProofKind::ALL.into_iter().find(|k| k.name() == family).ok_or_else(bad)?;
        let size = SectorSize::ALL.into_iter().find(|z| z.short() == size).ok_or_else(bad)?;
        Ok(CircuitId { kind, size })
    }

    /// A representative registered proof for this circuit (the newest version).
    pub fn representative(&self) -> Registered {
        let i = self.size.index();
        let (kind, number) = match self.kind {
            ProofKind::PoRepSealCommit => (self.kind, 5 + i),
            ProofKind::WinningPost => (self.kind, i),
            ProofKind::WindowPostPartition => (self.kind, 10 + i),
            ProofKind::SnapDealsUpdate => (self.kind, i),
        };
        Registered::resolve(kind, number, 0).expect("representative registered proofs exist")
    }
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.kind.name(), self.size.short())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_abi_numbers_map_to_the_right_api_variants() {
        use RegisteredSealProof::*;
        let r = |k, n| Registered::resolve(k, n, 0).unwrap();
        assert_eq!(r(ProofKind::PoRepSealCommit, 0), Registered::Seal(StackedDrg2KiBV1));
        assert_eq!(r(ProofKind::PoRepSealCommit, 8), Registered::Seal(StackedDrg32GiBV1_1));
        assert_eq!(r(ProofKind::PoRepSealCommit, 13), Registered::Seal(StackedDrg32GiBV1_1_Feat_SyntheticPoRep));
        assert_eq!(r(ProofKind::WinningPost, 3), Registered::Winning(RegisteredPoStProof::StackedDrgWinning32GiBV1));
        assert_eq!(
            r(ProofKind::WindowPostPartition, 8),
            Registered::Window(RegisteredPoStProof::StackedDrgWindow32GiBV1)
        );
        // Go's Window V1_1 is the api's V1_2.
        assert_eq!(
            r(ProofKind::WindowPostPartition, 13),
            Registered::Window(RegisteredPoStProof::StackedDrgWindow32GiBV1_2)
        );
        assert_eq!(r(ProofKind::SnapDealsUpdate, 4), Registered::Update(RegisteredUpdateProof::StackedDrg64GiBV1));
        for n in 0..15 {
            let reg = Registered::resolve(ProofKind::PoRepSealCommit, n, 0).unwrap();
            assert_eq!(reg.sector_size().bytes(), SectorSize::from_index(n % 5).bytes());
        }
    }

    #[test]
    fn partitions_match_filecoin() {
        let p = |k, n| Registered::resolve(k, n, 0).unwrap().partitions();
        assert_eq!(p(ProofKind::PoRepSealCommit, 8), 10);
        assert_eq!(p(ProofKind::PoRepSealCommit, 5), 1);
        assert_eq!(p(ProofKind::SnapDealsUpdate, 0), 1);
        assert_eq!(p(ProofKind::SnapDealsUpdate, 1), 4);
        assert_eq!(p(ProofKind::SnapDealsUpdate, 3), 16);
    }

    #[test]
    fn bad_registrations_are_typed_errors() {
        assert!(matches!(
            Registered::resolve(ProofKind::PoRepSealCommit, 99, 0),
            Err(InputError::UnknownRegisteredProof { .. })
        ));
        assert!(matches!(Registered::resolve(ProofKind::PoRepSealCommit, 15, 0), Err(InputError::Unsupported(_))));
        assert!(matches!(Registered::resolve(ProofKind::WinningPost, 7, 0), Err(InputError::WrongKindForProof { .. })));
        assert!(matches!(
            Registered::resolve(ProofKind::PoRepSealCommit, 5, 32 << 30),
            Err(InputError::SectorSizeMismatch { .. })
        ));
        assert!(matches!(SectorSize::from_bytes(4096), Err(InputError::UnsupportedSectorSize(4096))));
    }

    #[test]
    fn circuit_ids_round_trip() {
        for kind in ProofKind::ALL {
            for size in SectorSize::ALL {
                let id = CircuitId { kind, size };
                assert_eq!(CircuitId::parse(&id.to_string()).unwrap(), id);
                assert_eq!(id.representative().circuit_id(), id);
            }
        }
        assert_eq!(CircuitId::parse("porep-32g").unwrap().to_string(), "porep-32g");
        assert!(CircuitId::parse("porep-3g").is_err());
    }
}
