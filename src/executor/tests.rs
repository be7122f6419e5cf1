//! A dataset cut into tasks, each task's partial written and read back and
//! the partials merged in task order, against the one-process engine over the
//! whole dataset: counts, bins, ranges and each file's share equal exactly,
//! the sums of floats to 1e-12 of their size. The files are the HZZ sample
//! in six compressions (the same 2,421 events each, two baskets a column).

use std::path::{Path, PathBuf};

use super::partial::Partial;
use super::spec::{
    AxisSpec, Fill, JOB_FORMAT, JobSpec, Op, clusters_with_bytes, file_spec, plan_tasks,
};
use super::{InProcess, execute};
use crate::analysis::dataset::{Member, first_entries};
use crate::analysis::ops::{
    Axis, HistRequest, count_selected, histogram, histogram_2d, value_range,
};
use crate::analysis::{Defines, Plan, TreeColumns, TreeObject, quantities};
use crate::formats::root::RootFile;
use crate::job::Job;

const FILES: [&str; 6] = [
    "uproot-HZZ.root",
    "uproot-HZZ-zlib.root",
    "uproot-HZZ-lz4.root",
    "uproot-HZZ-zstd.root",
    "uproot-HZZ-lzma.root",
    "uproot-HZZ-uncompressed.root",
];

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/root")
        .join(name)
}

struct Opened {
    file: RootFile,
    tree: TreeObject,
}

fn open_all(names: &[&str]) -> Vec<Opened> {
    open_in(&path(""), names)
}

fn open_in(dir: &Path, names: &[&str]) -> Vec<Opened> {
    names
        .iter()
        .map(|n| {
            let file = RootFile::open(std::fs::File::open(dir.join(n)).unwrap()).unwrap();
            let key = file
                .walk()
                .unwrap()
                .into_iter()
                .find(|k| k.key.class_name == "TTree")
                .unwrap()
                .key;
            let tree = TreeObject::TTree(file.tree(&key).unwrap());
            Opened { file, tree }
        })
        .collect()
}

fn members<'a>(opened: &'a [Opened], trees: &'a [TreeColumns<'a>]) -> Vec<Member<'a>> {
    let firsts = first_entries(trees.iter().map(|t| t.entries));
    opened
        .iter()
        .zip(trees)
        .zip(firsts)
        .zip(FILES)
        .map(|(((o, tree), first_entry), label)| Member {
            file: &o.file,
            tree,
            first_entry,
            label,
        })
        .collect()
}

/// The job the daemon would write for `op` over the files, tasks of `per`.
fn job_of(members: &[Member<'_>], defines: &Defines, op: Op, per: usize) -> JobSpec {
    job_in((&path(""), &FILES, "events"), members, defines, op, per)
}

/// `job_of` for the files `names` in `dir`, of tree `tree`.
fn job_in(
    (dir, names, tree): (&Path, &[&str], &str),
    members: &[Member<'_>],
    defines: &Defines,
    op: Op,
    per: usize,
) -> JobSpec {
    let files: Vec<_> = members
        .iter()
        .zip(names)
        .map(|(m, name)| file_spec(m, (dir, name, name), (&[], &[])))
        .collect();
    JobSpec {
        format: JOB_FORMAT,
        tree: tree.into(),
        columns: members[0]
            .tree
            .columns
            .iter()
            .map(|c| c.path.clone())
            .collect(),
        defines: defines
            .iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect(),
        op,
        tasks: plan_tasks(&clusters_of(members), per, u64::MAX),
        files,
    }
}

/// Each member's clusters over all its columns, with their bytes.
fn clusters_of(members: &[Member<'_>]) -> Vec<Vec<(std::ops::Range<u64>, u64)>> {
    members
        .iter()
        .map(|m| clusters_with_bytes(m, &(0..m.tree.columns.len()).collect::<Vec<_>>()))
        .collect()
}

fn run(spec: JobSpec) -> Partial {
    let spec_files = spec.files.len();
    let jobs = tempfile::tempdir().unwrap();
    let merged = execute(&InProcess, jobs.path(), spec, &Job::default()).unwrap();
    assert!(merged.failed.is_empty(), "{:?}", merged.failed);
    // Every file read, in order (a file cut into shares once per share).
    let mut read = merged.files_read.clone();
    read.dedup();
    assert_eq!(read, (0..spec_files).collect::<Vec<_>>());
    // The job's folder is gone with its answer.
    assert_eq!(std::fs::read_dir(jobs.path()).unwrap().count(), 0);
    merged.partial.unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn tasks_merged_in_order_give_the_one_process_answer() {
    let opened = open_all(&FILES);
    let trees: Vec<TreeColumns<'_>> = opened.iter().map(|o| TreeColumns::of(&o.tree)).collect();
    let members = members(&opened, &trees);
    let defines = Defines::new(vec![("pt".into(), "hypot(Muon_Px, Muon_Py)".into())]).unwrap();
    let job = Job::default();
    let cut_text = "pt > 20 && abs(Muon_Pz) < 80";
    let cut = Plan::with_defines(cut_text, &trees[0], &defines).unwrap();
    let value = quantities::plan("pt", &trees[0], &defines).unwrap();
    let weight = quantities::plan("Muon_E", &trees[0], &defines).unwrap();
    for per in [1, 4, 6] {
        // Counts.
        let (total, by_file) = count_selected(&members, &cut, &job).unwrap();
        let spec = job_of(
            &members,
            &defines,
            Op::Count {
                cut: cut_text.into(),
            },
            per,
        );
        assert_eq!(run(spec), Partial::Count { total, by_file }, "per {per}");
        assert!(total.selected > 0 && total.selected < total.scanned);

        // A histogram's range, then the weighted histogram.
        let fill = Fill {
            value: "pt".into(),
            cut: Some(cut_text.into()),
            weight: Some("Muon_E".into()),
            flatten: true,
        };
        let req = HistRequest {
            value: &value,
            cut: Some(&cut),
            weight: Some(&weight),
            flatten: true,
        };
        let range = value_range(&members, &req, &job).unwrap();
        let spec = job_of(&members, &defines, Op::Range { fill: fill.clone() }, per);
        assert_eq!(run(spec), Partial::Range(range));
        let axis = Axis {
            bins: 37,
            lo: 0.0,
            hi: 120.0,
        };
        let local = histogram(&members, &req, axis, &job).unwrap();
        let spec = job_of(
            &members,
            &defines,
            Op::Histogram {
                fill: fill.clone(),
                axis: AxisSpec::from(axis),
            },
            per,
        );
        let Partial::Histogram(merged) = run(spec) else {
            panic!("a histogram")
        };
        assert_eq!(
            (merged.entries, merged.scanned, merged.selected),
            (local.entries, local.scanned, local.selected)
        );
        let sums = |h: &crate::analysis::ops::Hist1| {
            let mut v = vec![h.sum_w, h.sum_wx, h.sum_wx2, h.underflow, h.overflow];
            v.extend(&h.counts);
            v.extend(&h.sumw2);
            v
        };
        for (a, b) in sums(&merged).into_iter().zip(sums(&local)) {
            assert!(close(a, b), "per {per}: {a} != {b}");
        }
        assert_eq!(merged.by_member.len(), FILES.len());
        for (m, l) in merged.by_member.iter().zip(&local.by_member) {
            assert_eq!(
                (m.entries, m.scanned, m.selected),
                (l.entries, l.scanned, l.selected)
            );
        }

        // Unweighted: the bins are counts, equal exactly.
        let plain = HistRequest {
            weight: None,
            ..req
        };
        let local = histogram(&members, &plain, axis, &job).unwrap();
        let spec = job_of(
            &members,
            &defines,
            Op::Histogram {
                fill: Fill {
                    weight: None,
                    ..fill.clone()
                },
                axis: axis.into(),
            },
            per,
        );
        let Partial::Histogram(merged) = run(spec) else {
            panic!("a histogram")
        };
        assert_eq!(merged.counts, local.counts);
        assert_eq!(
            (merged.underflow, merged.overflow),
            (local.underflow, local.overflow)
        );
        assert!(close(merged.sum_wx, local.sum_wx));

        // 2-D.
        let y = quantities::plan("Muon_Py", &trees[0], &defines).unwrap();
        let axes = (
            axis,
            Axis {
                bins: 20,
                lo: -60.0,
                hi: 60.0,
            },
        );
        let local = histogram_2d(&members, &plain, &y, axes, &job).unwrap();
        let spec = job_of(
            &members,
            &defines,
            Op::Histogram2d {
                fill: Fill {
                    weight: None,
                    ..fill
                },
                y: "Muon_Py".into(),
                axes: (axes.0.into(), axes.1.into()),
            },
            per,
        );
        assert_eq!(run(spec), Partial::Histogram2d(local));

        // A weighted cutflow with n-1 counts: entries exact, sums close.
        let cuts = ["NMuon >= 1", cut_text];
        let plans: Vec<Plan> = cuts
            .iter()
            .map(|c| Plan::with_defines(c, &trees[0], &defines).unwrap())
            .collect();
        let req = crate::analysis::cutflow::FlowRequest {
            cuts: plans.iter().collect(),
            weight: None,
            n_minus_one: true,
        };
        let (total, by_file) = crate::analysis::cutflow::cutflow(&members, &req, &job).unwrap();
        let spec = job_of(
            &members,
            &defines,
            Op::Cutflow {
                cuts: cuts.iter().map(|c| c.to_string()).collect(),
                weight: None,
                n_minus_one: true,
            },
            per,
        );
        assert_eq!(run(spec), Partial::Cutflow { total, by_file });
    }
}

/// A file that is no ROOT file in the middle of a task: named with why, and
/// the task's other files (and the other tasks) merge as without it.
#[test]
fn a_damaged_file_is_named_and_the_rest_merge() {
    let opened = open_all(&FILES);
    let trees: Vec<TreeColumns<'_>> = opened.iter().map(|o| TreeColumns::of(&o.tree)).collect();
    let members = members(&opened, &trees);
    let defines = Defines::default();
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.root");
    // The zlib file with its baskets overwritten past the header: it opens,
    // its baskets do not decompress.
    let mut bytes = std::fs::read(path(FILES[1])).unwrap();
    let half = bytes.len() / 2;
    for b in &mut bytes[400..half] {
        *b = 0x5a;
    }
    std::fs::write(&broken, &bytes).unwrap();
    let mut spec = job_of(
        &members,
        &defines,
        Op::Count {
            cut: "Muon_Px > 10".into(),
        },
        3,
    );
    spec.files[1].root = dir.path().to_path_buf();
    spec.files[1].rel = "broken.root".into();
    let jobs = tempfile::tempdir().unwrap();
    let merged = execute(&InProcess, jobs.path(), spec, &Job::default()).unwrap();
    assert_eq!(merged.failed.len(), 1, "{:?}", merged.failed);
    assert_eq!(merged.failed[0].0, FILES[1]);
    assert_eq!(merged.files_read, vec![0, 2, 3, 4, 5]);
    let cut = Plan::new("Muon_Px > 10", &trees[0]).unwrap();
    let without: Vec<Member<'_>> = members
        .iter()
        .enumerate()
        .filter(|(k, _)| *k != 1)
        .map(|(_, m)| *m)
        .collect();
    let (total, by_file) = count_selected(&without, &cut, &Job::default()).unwrap();
    assert_eq!(merged.partial, Some(Partial::Count { total, by_file }));
}

/// The merge's cost (docs/guide/cluster.md): 200 task results of a 10,000-bin
/// histogram read from their files, decoded and added in order. A
/// measurement, not a check: `cargo test --release --lib
/// executor::tests::merging_200_partials -- --ignored --nocapture`.
#[test]
#[ignore]
fn merging_200_partials_of_10000_bins() {
    use super::partial::{TaskResult, merge};
    use crate::analysis::ops::Hist1;
    let dir = tempfile::tempdir().unwrap();
    let axis = Axis {
        bins: 10_000,
        lo: 0.0,
        hi: 1.0,
    };
    for task in 0..200 {
        let mut h = Hist1::empty(&axis);
        for (b, c) in h.counts.iter_mut().enumerate() {
            *c = ((b * 7 + task) % 13) as f64;
        }
        h.sumw2.clone_from(&h.counts);
        h.by_member = vec![Hist1::default(); 5];
        TaskResult {
            task,
            partial: Some(Partial::Histogram(h)),
            files_read: (task * 5..task * 5 + 5).collect(),
            failed: Vec::new(),
            bytes_read: 0,
            clusters_skipped: 0,
        }
        .write(dir.path())
        .unwrap();
    }
    let started = std::time::Instant::now();
    let results: Vec<TaskResult> = (0..200)
        .map(|t| TaskResult::read(dir.path(), t).unwrap())
        .collect();
    let read = started.elapsed();
    let merged = merge(results);
    let took = started.elapsed();
    println!("of which reading and decoding {read:?}");
    let Some(Partial::Histogram(h)) = merged.partial else {
        panic!("a histogram")
    };
    assert_eq!(h.by_member.len(), 1000);
    println!("read, decoded and merged 200 partials of 10,000 bins in {took:?}");
}

/// get_branch_stats' count, mean, std, min and max from tasks' moments
/// merged in task order, against the one-process `branch_stats` (which keeps
/// the values for quantiles: its own path to the moments).
#[test]
fn moments_merged_in_order_give_the_one_process_statistics() {
    use crate::analysis::quantiles::{DEFAULT_CAP, branch_stats};
    let opened = open_all(&FILES);
    let trees: Vec<TreeColumns<'_>> = opened.iter().map(|o| TreeColumns::of(&o.tree)).collect();
    let members = members(&opened, &trees);
    let defines = Defines::new(vec![("pt".into(), "hypot(Muon_Px, Muon_Py)".into())]).unwrap();
    let job = Job::default();
    let cut_text = "NMuon >= 1 && MET_px > -20";
    let cut = Plan::with_defines(cut_text, &trees[0], &defines).unwrap();
    let values = ["pt", "Muon_E", "MET_py * 2"];
    for per in [1, 4, 6] {
        let spec = job_of(
            &members,
            &defines,
            Op::Moments {
                values: values.iter().map(|v| v.to_string()).collect(),
                cut: Some(cut_text.into()),
            },
            per,
        );
        let Partial::Moments(shares) = run(spec) else {
            panic!("moments")
        };
        assert_eq!(shares.len(), values.len());
        for (text, share) in values.iter().zip(&shares) {
            let value = quantities::plan(text, &trees[0], &defines).unwrap();
            let req = HistRequest {
                value: &value,
                cut: Some(&cut),
                weight: None,
                flatten: true,
            };
            let local = branch_stats(&members, &req, &[], DEFAULT_CAP, None, &job).unwrap();
            let merged = share.stats();
            let what = format!("{text}, per {per}");
            assert!(local.count > 0, "{what}");
            let exact = |s: &crate::analysis::quantiles::Stats| {
                (s.count, s.min, s.max, s.scanned, s.selected)
            };
            assert_eq!(exact(&merged), exact(&local), "{what}");
            assert!(close(merged.mean.unwrap(), local.mean.unwrap()), "{what}");
            assert!(close(merged.std.unwrap(), local.std.unwrap()), "{what}");
            assert_eq!(merged.by_member.len(), FILES.len());
            for (m, l) in merged.by_member.iter().zip(&local.by_member) {
                assert_eq!(exact(m), exact(l), "{what}");
                assert!(close(m.mean.unwrap(), l.mean.unwrap()), "{what}");
                assert!(close(m.std.unwrap(), l.std.unwrap()), "{what}");
            }
        }
    }
}

/// Every file cut into shares of one cluster, a task each (three copies of
/// `tests/data/root/dimuon.root`, 3 clusters each): counts, bins and moments
/// merged in task order equal the one-process scan's.
#[test]
fn files_cut_into_cluster_shares_give_the_one_process_answer() {
    use crate::analysis::quantiles::{DEFAULT_CAP, branch_stats};
    let dir = tempfile::tempdir().unwrap();
    let names = ["d0.root", "d1.root", "d2.root"];
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/root/dimuon.root");
    for n in names {
        std::fs::copy(&source, dir.path().join(n)).unwrap();
    }
    let opened = open_in(dir.path(), &names);
    let trees: Vec<TreeColumns<'_>> = opened.iter().map(|o| TreeColumns::of(&o.tree)).collect();
    let firsts = first_entries(trees.iter().map(|t| t.entries));
    let members: Vec<Member<'_>> = opened
        .iter()
        .zip(&trees)
        .zip(firsts)
        .zip(names)
        .map(|(((o, tree), first_entry), label)| Member {
            file: &o.file,
            tree,
            first_entry,
            label,
        })
        .collect();
    let defines = Defines::new(vec![]).unwrap();
    let job = Job::default();
    let cut_text = "nMuon >= 1 && met > 10";
    let cut = Plan::with_defines(cut_text, &trees[0], &defines).unwrap();
    let read: Vec<usize> = ["nMuon", "met", "Muon_pt"]
        .iter()
        .map(|c| trees[0].find(c).unwrap())
        .collect();
    let clusters: Vec<_> = members
        .iter()
        .map(|m| clusters_with_bytes(m, &read))
        .collect();
    let split = |op: Op| {
        let mut spec = job_in((dir.path(), &names, "Events"), &members, &defines, op, 2);
        spec.tasks = plan_tasks(&clusters, 2, 1);
        assert_eq!(spec.tasks.len(), 9, "{:?}", spec.tasks);
        assert!(spec.tasks.iter().all(|t| t.entries.is_some()));
        spec
    };
    let (total, _) = count_selected(&members, &cut, &job).unwrap();
    assert!(total.selected > 0 && total.selected < total.scanned);
    let Partial::Count { total: merged, .. } = run(split(Op::Count {
        cut: cut_text.into(),
    })) else {
        panic!("a count")
    };
    assert_eq!(merged, total);

    let value = quantities::plan("Muon_pt", &trees[0], &defines).unwrap();
    let req = HistRequest {
        value: &value,
        cut: Some(&cut),
        weight: None,
        flatten: true,
    };
    let axis = Axis {
        bins: 40,
        lo: 0.0,
        hi: 100.0,
    };
    let local = histogram(&members, &req, axis, &job).unwrap();
    let fill = Fill {
        value: "Muon_pt".into(),
        cut: Some(cut_text.into()),
        weight: None,
        flatten: true,
    };
    let Partial::Histogram(merged) = run(split(Op::Histogram {
        fill,
        axis: axis.into(),
    })) else {
        panic!("a histogram")
    };
    assert_eq!(merged.counts, local.counts);
    let tally = |h: &crate::analysis::ops::Hist1| {
        (h.entries, h.scanned, h.selected, h.underflow, h.overflow)
    };
    assert_eq!(tally(&merged), tally(&local));

    let stats = branch_stats(&members, &req, &[], DEFAULT_CAP, None, &job).unwrap();
    let Partial::Moments(shares) = run(split(Op::Moments {
        values: vec!["Muon_pt".into()],
        cut: Some(cut_text.into()),
    })) else {
        panic!("moments")
    };
    let merged = shares[0].stats();
    assert_eq!(
        (merged.count, merged.min, merged.max, merged.scanned),
        (stats.count, stats.min, stats.max, stats.scanned)
    );
    assert!(close(merged.mean.unwrap(), stats.mean.unwrap()));
    assert!(close(merged.std.unwrap(), stats.std.unwrap()));
}

/// An export cut into tasks: each task's part joined in task order, cut to
/// the call's limit, is the file one export over the whole dataset writes,
/// byte for byte (CSV and JSON), each file's rows written alike; the limit
/// falls inside a later task or past every row.
#[test]
fn export_parts_joined_in_order_give_the_one_process_file() {
    use super::execute_then;
    use super::partial::{cut_exports_to, export_part_path};
    use crate::analysis::export::{ExportFormat, export};
    use crate::analysis::export_join::{Part, join_parts};

    let opened = open_all(&FILES);
    let trees: Vec<TreeColumns<'_>> = opened.iter().map(|o| TreeColumns::of(&o.tree)).collect();
    let members = members(&opened, &trees);
    let defines = Defines::new(Vec::new()).unwrap();
    let columns: Vec<(Option<String>, String)> = vec![
        (None, "Muon_Px".into()),
        (None, "NMuon".into()),
        (Some("e2".into()), "Muon_E * 2".into()),
    ];
    let named: Vec<_> = columns
        .iter()
        .map(|(n, t)| quantities::named(n.as_deref(), t, &trees[0], &defines).unwrap())
        .collect();
    let cut_text = "NMuon >= 1 && MET_px > -20";
    let cut = Plan::with_defines(cut_text, &trees[0], &defines).unwrap();
    let shown: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    for format in [ExportFormat::Csv, ExportFormat::Json] {
        for limit in [u64::MAX >> 1, 5_000, 0] {
            let (local, want) = export(
                &members,
                &named,
                Some(&shown),
                Some(&cut),
                limit,
                format,
                Vec::new(),
                &Job::default(),
            )
            .unwrap();
            let op = Op::Export {
                columns: columns.clone(),
                cut: Some(cut_text.into()),
                limit,
                format,
                provenance: true,
            };
            let spec = job_of(&members, &defines, op, 2);
            let jobs = tempfile::tempdir().unwrap();
            let (merged, joined) = execute_then(
                &InProcess,
                jobs.path(),
                spec,
                &Job::default(),
                |dir, results| {
                    let (rows, _) = cut_exports_to(results, limit);
                    let parts: Vec<Part> = results
                        .iter()
                        .zip(rows)
                        .map(|(r, rows)| Part {
                            path: export_part_path(dir, r.task),
                            rows,
                        })
                        .collect();
                    join_parts(&parts, format, Vec::new(), &Job::default()).unwrap()
                },
            )
            .unwrap();
            let what = format!("{format:?} limit {limit}");
            if limit == 5_000 {
                // Inside the second task (about 3,000 rows a task).
                assert_eq!(local.entries_written, 5_000);
            }
            assert!(joined == want, "{what}: the files differ");
            let Some(Partial::Export {
                entries_written,
                by_file,
                ..
            }) = merged.partial
            else {
                panic!("an export")
            };
            assert_eq!(entries_written, local.entries_written, "{what}");
            let written = |b: &[crate::analysis::ops::Counted]| -> Vec<u64> {
                b.iter().map(|c| c.selected).collect()
            };
            assert_eq!(written(&by_file), written(&local.by_member), "{what}");
        }
    }
}
