//! The base set: generated windows' feature vectors and labels, without their traces, bundled
//! with the web app so that the user can retrain the window model in the browser on it plus the
//! labels they kept ([`retrain`]). Written by `ttap-dev train --base-set`.
//!
//! Format (gzip of): `TTAPBASE`, then little-endian `u32`s: format version, generator version,
//! features per window, windows; then every window's features as `f32`s, then one byte per window:
//! 0 for a healthy window, `k + 1` for `AntiPattern::ALL[k]`.

use std::io::{Read, Write};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use super::fit::{fit, Params};
use super::{MlError, Model, Provenance, GENERATOR_VERSION};
use crate::features::NAMES;
use crate::model::AntiPattern;

const MAGIC: &[u8; 8] = b"TTAPBASE";
const FORMAT_VERSION: u32 = 1;
/// More windows than this is not a base set but a mistake (or a hostile file).
const MAX_WINDOWS: usize = 1 << 20;

/// Feature vectors (in [`NAMES`] order) and their labels.
#[derive(Clone, Debug, PartialEq)]
pub struct BaseSet {
    /// The generator that made the windows.
    pub generator: u32,
    pub windows: Vec<Vec<f32>>,
    pub labels: Vec<Option<AntiPattern>>,
}

/// Why a base set could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BaseSetError {
    #[error("not a base set (no TTAPBASE header): rebuild it with `ttap-dev train --base-set`")]
    NotABaseSet,
    #[error("base set format {0}, this build reads {FORMAT_VERSION}: rebuild it with `ttap-dev train --base-set`")]
    Version(u32),
    #[error("the base set has {0} features per window, this build's model has {n}: rebuild it with `ttap-dev train --base-set`", n = NAMES.len())]
    Features(u32),
    #[error("the base set is cut short or holds {0} windows (at most {MAX_WINDOWS})")]
    Size(usize),
    #[error("window {0} of the base set has label {1}, which names no anti-pattern")]
    Label(usize, u8),
}

impl BaseSet {
    /// Every anomalous window and one healthy window in `keep_healthy` (the first of each run).
    pub fn sample(
        windows: &[&[f32]],
        labels: &[Option<AntiPattern>],
        keep_healthy: usize,
    ) -> BaseSet {
        let mut healthy = 0;
        let (windows, labels) = windows
            .iter()
            .zip(labels)
            .filter(|(_, l)| {
                l.is_some() || {
                    healthy += 1;
                    (healthy - 1) % keep_healthy.max(1) == 0
                }
            })
            .map(|(w, l)| (w.to_vec(), *l))
            .unzip();
        BaseSet {
            generator: GENERATOR_VERSION,
            windows,
            labels,
        }
    }

    /// The gzip-compressed file.
    pub fn encode(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(24 + self.windows.len() * (NAMES.len() * 4 + 1));
        raw.extend_from_slice(MAGIC);
        for n in [
            FORMAT_VERSION,
            self.generator,
            NAMES.len() as u32,
            self.windows.len() as u32,
        ] {
            raw.extend_from_slice(&n.to_le_bytes());
        }
        for w in &self.windows {
            for v in w {
                raw.extend_from_slice(&v.to_le_bytes());
            }
        }
        raw.extend(self.labels.iter().map(|l| {
            l.map_or(0, |k| {
                AntiPattern::ALL.iter().position(|p| *p == k).unwrap_or(0) as u8 + 1
            })
        }));
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(&raw).expect("writing to memory");
        gz.finish().expect("writing to memory")
    }

    /// Reads a file written by [`BaseSet::encode`].
    pub fn decode(bytes: &[u8]) -> Result<BaseSet, BaseSetError> {
        let mut raw = Vec::new();
        let limit = (MAX_WINDOWS * (NAMES.len() * 4 + 1) + 24) as u64;
        GzDecoder::new(bytes)
            .take(limit + 1)
            .read_to_end(&mut raw)
            .map_err(|_| BaseSetError::NotABaseSet)?;
        if raw.len() < 24 || &raw[..8] != MAGIC {
            return Err(BaseSetError::NotABaseSet);
        }
        let word = |k: usize| u32::from_le_bytes(raw[8 + 4 * k..12 + 4 * k].try_into().unwrap());
        if word(0) != FORMAT_VERSION {
            return Err(BaseSetError::Version(word(0)));
        }
        if word(2) as usize != NAMES.len() {
            return Err(BaseSetError::Features(word(2)));
        }
        let n = word(3) as usize;
        let width = NAMES.len() * 4;
        if n > MAX_WINDOWS || raw.len() != 24 + n * (width + 1) {
            return Err(BaseSetError::Size(n));
        }
        let windows = raw[24..24 + n * width]
            .chunks_exact(width)
            .map(|row| {
                row.chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            })
            .collect();
        let labels = raw[24 + n * width..]
            .iter()
            .enumerate()
            .map(|(i, &b)| match b {
                0 => Ok(None),
                k => AntiPattern::ALL
                    .get(usize::from(k) - 1)
                    .map(|p| Some(*p))
                    .ok_or(BaseSetError::Label(i, k)),
            })
            .collect::<Result<_, _>>()?;
        Ok(BaseSet {
            generator: word(1),
            windows,
            labels,
        })
    }
}

/// How many base windows one label the user kept counts as: their labels speak of the trace in
/// front of them, the base set of generated ones.
pub(crate) const KEPT_LABEL_WEIGHT: usize = 25;

/// The forests' sizes when retraining in the browser: fewer trees than the committed model, so
/// that a retrain takes seconds there.
pub(crate) const RETRAIN_PARAMS: Params = Params {
    trees: 40,
    max_depth: 12,
    min_samples_leaf: 2,
    seed: 1,
};

/// A model fitted on the base set plus the user's kept labels (each window's features and its
/// label, `None` for "no anti-pattern"), each counting [`KEPT_LABEL_WEIGHT`] times.
pub fn retrain(base: &BaseSet, kept: &[(Vec<f32>, Option<AntiPattern>)]) -> Result<Model, MlError> {
    let mut windows: Vec<&[f32]> = base.windows.iter().map(Vec::as_slice).collect();
    let mut labels = base.labels.clone();
    for (w, l) in kept {
        if w.len() != NAMES.len() {
            return Err(MlError::KeptWindow(w.len()));
        }
        windows.extend(std::iter::repeat_n(w.as_slice(), KEPT_LABEL_WEIGHT));
        labels.extend(std::iter::repeat_n(*l, KEPT_LABEL_WEIGHT));
    }
    let p = RETRAIN_PARAMS;
    fit(
        &windows,
        &labels,
        p,
        Provenance {
            generator: base.generator,
            traces: 0,
            seed: 0,
            models: Vec::new(),
            gpus: Vec::new(),
            trees: p.trees,
            max_depth: p.max_depth,
            min_samples_leaf: p.min_samples_leaf,
            forest_seed: p.seed,
            command: format!(
                "retrained in the browser on the base set ({} windows) and {} kept labels",
                base.windows.len(),
                kept.len()
            ),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> BaseSet {
        BaseSet {
            generator: 7,
            windows: vec![vec![0.5; NAMES.len()], vec![-1.25; NAMES.len()]],
            labels: vec![None, Some(AntiPattern::HostSync)],
        }
    }

    #[test]
    fn a_base_set_round_trips_through_its_file() {
        assert_eq!(BaseSet::decode(&tiny().encode()).unwrap(), tiny());
    }

    #[test]
    fn a_damaged_base_set_is_refused_with_the_reason() {
        assert_eq!(BaseSet::decode(b"not gzip"), Err(BaseSetError::NotABaseSet));
        let raw = |edit: &dyn Fn(&mut Vec<u8>)| {
            let encoded = tiny().encode();
            let mut gz = GzDecoder::new(&encoded[..]);
            let mut raw = Vec::new();
            gz.read_to_end(&mut raw).unwrap();
            edit(&mut raw);
            let mut out = GzEncoder::new(Vec::new(), Compression::fast());
            out.write_all(&raw).unwrap();
            BaseSet::decode(&out.finish().unwrap())
        };
        assert_eq!(raw(&|r| r[8] = 9), Err(BaseSetError::Version(9)));
        assert_eq!(raw(&|r| r[16] = 3), Err(BaseSetError::Features(3)));
        assert_eq!(
            raw(&|r| r.truncate(r.len() - 1)),
            Err(BaseSetError::Size(2))
        );
        assert_eq!(
            raw(&|r| *r.last_mut().unwrap() = 42),
            Err(BaseSetError::Label(1, 42))
        );
    }

    #[test]
    fn sampling_keeps_every_anomalous_window_and_one_healthy_in_k() {
        let w = [0.0f32; 1];
        let windows = [&w[..]; 7];
        let labels = [
            None,
            None,
            Some(AntiPattern::DataLoader),
            None,
            None,
            None,
            None,
        ];
        let s = BaseSet::sample(&windows, &labels, 3);
        // Healthy windows 1 and 4 of 6 are kept, and the anomalous one.
        assert_eq!(s.labels, vec![None, Some(AntiPattern::DataLoader), None]);
    }
}
