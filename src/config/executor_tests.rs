//! `[executor]` in the config file: every key read into the settings the
//! dataset tools use, and each bad value refused at start with the key named.

use super::*;
use crate::executor::ExecutorKind;

/// Settings from a config holding one root and `executor` as its
/// `[executor]` table.
fn load(executor: &str) -> anyhow::Result<Settings> {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("data")).unwrap();
    let cfg = tmp.path().join("quarry.toml");
    let text = format!("catalog = \"cat\"\n[[roots]]\npath = \"data\"\n[executor]\n{executor}\n");
    std::fs::write(&cfg, text).unwrap();
    Settings::load(&ServeArgs {
        config: Some(cfg),
        ..ServeArgs::default()
    })
}

#[test]
fn every_executor_key_is_read() {
    let s = load(
        "kind = \"slurm\"\npartition = \"short\"\nmax_jobs = 100\nfiles_per_job = 20\n\
         time_limit = \"1:00:00\"\nextra_args = [\"--mem=4G\", \"--account=atlas\"]\n\
         auto_above_gb = 0.5\nquarry = \"/opt/quarry/bin/quarry\"",
    )
    .unwrap();
    let e = &s.server.executor;
    assert_eq!(e.kind, ExecutorKind::Slurm);
    assert_eq!(e.slurm.partition.as_deref(), Some("short"));
    assert_eq!(e.slurm.max_jobs, Some(100));
    assert_eq!(e.slurm.files_per_job, Some(20));
    assert_eq!(e.slurm.time_limit.as_deref(), Some("1:00:00"));
    assert_eq!(e.slurm.extra_args, vec!["--mem=4G", "--account=atlas"]);
    // 0.5 GB, in bytes (decimal GB, as dry_run's figures).
    assert_eq!(e.auto_above_bytes, Some(500_000_000));
    assert_eq!(e.quarry, Some(PathBuf::from("/opt/quarry/bin/quarry")));
    assert!(e.jobs_dir.as_ref().unwrap().ends_with("cat/jobs"));
}

#[test]
fn an_empty_executor_table_is_the_local_executor() {
    let s = load("").unwrap();
    let e = &s.server.executor;
    assert_eq!(e.kind, ExecutorKind::Local);
    assert_eq!(e.slurm, crate::executor::slurm::SlurmSettings::default());
    assert_eq!(e.auto_above_bytes, None);
}

#[test]
fn bad_executor_values_are_refused_naming_the_key() {
    let cases = [
        ("kind = \"condor\"", &["condor", "local", "slurm"][..]),
        ("max_jobs = 0", &["max_jobs", "at least 1"]),
        ("max_jobs = -3", &["max_jobs"]),
        ("max_jobs = \"many\"", &["max_jobs"]),
        ("files_per_job = 0", &["files_per_job", "at least 1"]),
        ("partition = \"\"", &["partition"]),
        ("time_limit = \"1h\"", &["time_limit", "'1h'", "HH:MM:SS"]),
        ("time_limit = 60", &["time_limit"]),
        ("extra_args = [\"--array=0-9\"]", &["extra_args", "--array"]),
        ("extra_args = [\"-J other\"]", &["extra_args", "-J"]),
        ("extra_args = [\"mem=4G\"]", &["extra_args", "'-'"]),
        ("extra_args = \"--mem=4G\"", &["extra_args"]),
        ("auto_above_gb = -1", &["auto_above_gb"]),
        ("auto_above_gb = nan", &["auto_above_gb"]),
        ("partitions = \"short\"", &["partitions", "unknown field"]),
    ];
    for (text, words) in cases {
        let err = match load(text) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => format!("{e:#}"),
        };
        for w in words {
            assert!(err.contains(w), "{text}: {err}");
        }
    }
}
