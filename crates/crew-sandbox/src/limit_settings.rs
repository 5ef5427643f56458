//! The `limits` settings: resource limits for sandboxed commands and caps on the tool
//! results kept on disk, resolved across the settings layers.
//!
//! ```json
//! "limits": {
//!   "maxProcesses": 2048,         // processes one sandboxed command may have at once
//!   "maxFileSizeMiB": 8192,       // the largest file it may write
//!   "cpuSecondsPerProcess": 7200, // CPU time each of its processes may use
//!   "maxResultMiB": 32,           // the most of one tool result kept on disk
//!   "sessionResultsMiB": 1024     // the most of all results one session keeps on disk
//! }
//! ```
//!
//! The user's own files (user settings, an untracked local file) set any value; a shared
//! (project) file may only tighten: its value counts only where it is lower. A value that
//! is not a whole number of at least 1 is an error naming the file and the field.

use std::path::PathBuf;

use serde_json::Value;

use super::limits::Limits;
use crate::results_budget::ResultCaps;
use crew_config::settings::LayeredLimits;

/// A `limits` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "settings file {}: limits.{field}: {message}; fix the value or remove it",
    file.display()
)]
pub struct LimitsError {
    /// The settings file.
    pub file: PathBuf,
    /// The field under `limits`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// The limits and caps the settings ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resolved {
    /// Resource limits for sandboxed commands.
    pub limits: Limits,
    /// Caps on the results kept on disk.
    pub results: ResultCaps,
}

const MIB: u64 = 1 << 20;

/// The fields, each with its multiplier to the unit the limit is kept in.
const FIELDS: &[(&str, u64)] = &[
    ("maxProcesses", 1),
    ("maxFileSizeMiB", MIB),
    ("cpuSecondsPerProcess", 1),
    ("maxResultMiB", MIB),
    ("sessionResultsMiB", MIB),
];

/// Resolves the layers' `limits` objects (highest layer first) over the defaults.
pub fn resolve(layers: &[LayeredLimits]) -> Result<Resolved, LimitsError> {
    let defaults = Resolved::default();
    let mut own: [Option<u64>; 5] = [None; 5];
    let mut shared: [Option<u64>; 5] = [None; 5];
    for layer in layers {
        let Value::Object(map) = &layer.value else {
            return Err(LimitsError {
                file: layer.file.clone(),
                field: String::new(),
                message: "expected an object of limits".into(),
            });
        };
        for key in map.keys() {
            if !FIELDS.iter().any(|(f, _)| f == key) {
                return Err(LimitsError {
                    file: layer.file.clone(),
                    field: key.clone(),
                    message: format!(
                        "unknown limit; the limits are {}",
                        FIELDS
                            .iter()
                            .map(|(f, _)| *f)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        for (i, (field, unit)) in FIELDS.iter().enumerate() {
            let Some(v) = map.get(*field) else { continue };
            let n = v.as_u64().filter(|n| *n >= 1).ok_or_else(|| LimitsError {
                file: layer.file.clone(),
                field: (*field).into(),
                message: format!("expected a whole number of at least 1, got {v}"),
            })?;
            let n = n.saturating_mul(*unit);
            // The highest own layer decides; shared layers only tighten.
            let slot = if layer.source.is_own() {
                &mut own[i]
            } else {
                &mut shared[i]
            };
            *slot = Some(match *slot {
                Some(prev) if !layer.source.is_own() => prev.min(n),
                Some(prev) => prev,
                None => n,
            });
        }
    }
    let base = [
        defaults.limits.max_processes,
        defaults.limits.max_file_size,
        defaults.limits.cpu_seconds,
        Some(defaults.results.max_result_bytes),
        Some(defaults.results.session_budget_bytes),
    ];
    let pick = |i: usize| -> Option<u64> {
        let v = own[i].or(base[i]);
        match (v, shared[i]) {
            (Some(v), Some(s)) => Some(v.min(s)),
            (v, _) => v,
        }
    };
    Ok(Resolved {
        limits: Limits {
            max_processes: pick(0),
            max_file_size: pick(1),
            cpu_seconds: pick(2),
        },
        results: ResultCaps {
            max_result_bytes: pick(3).unwrap_or(defaults.results.max_result_bytes),
            session_budget_bytes: pick(4).unwrap_or(defaults.results.session_budget_bytes),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_config::settings::Source;
    use serde_json::json;

    fn layer(source: Source, value: Value) -> LayeredLimits {
        LayeredLimits {
            file: PathBuf::from(match source {
                Source::Own => "/h/.crew/settings.json",
                Source::Shared => "/p/.crew/settings.json",
            }),
            source,
            value,
        }
    }

    #[test]
    fn without_settings_the_defaults_hold() {
        assert_eq!(resolve(&[]).unwrap(), Resolved::default());
        assert_eq!(Resolved::default().results.max_result_bytes, 32 * MIB);
        assert_eq!(Resolved::default().results.session_budget_bytes, 1024 * MIB);
    }

    #[test]
    fn the_users_own_files_set_any_value_and_the_highest_wins() {
        let r = resolve(&[
            layer(
                Source::Own,
                json!({"maxProcesses": 64, "maxResultMiB": 100}),
            ),
            layer(Source::Own, json!({"maxProcesses": 9000})),
        ])
        .unwrap();
        assert_eq!(r.limits.max_processes, Some(64));
        assert_eq!(r.results.max_result_bytes, 100 * MIB);
    }

    #[test]
    fn a_project_file_only_tightens() {
        let r = resolve(&[layer(
            Source::Shared,
            json!({"maxProcesses": 1_000_000, "maxFileSizeMiB": 10}),
        )])
        .unwrap();
        assert_eq!(r.limits.max_processes, Limits::default().max_processes);
        assert_eq!(r.limits.max_file_size, Some(10 * MIB));
        let r = resolve(&[
            layer(Source::Own, json!({"maxProcesses": 5000})),
            layer(Source::Shared, json!({"maxProcesses": 100})),
        ])
        .unwrap();
        assert_eq!(r.limits.max_processes, Some(100));
    }

    #[test]
    fn bad_values_name_the_file_and_the_field() {
        for (value, field) in [
            (json!({"maxProcesses": 0}), "maxProcesses"),
            (json!({"maxFileSizeMiB": "big"}), "maxFileSizeMiB"),
            (json!({"maxProcesses": -3}), "maxProcesses"),
            (json!({"maxProceses": 3}), "maxProceses"),
        ] {
            let e = resolve(&[layer(Source::Own, value)]).unwrap_err();
            assert_eq!(e.field, field);
            let text = e.to_string();
            assert!(text.contains("/h/.crew/settings.json"), "{text}");
            assert!(text.contains(&format!("limits.{field}")), "{text}");
        }
        assert!(resolve(&[layer(Source::Own, json!(5))]).is_err());
    }
}
