//! `quarry rebuild`: empties the catalog and indexes every root again, with a
//! progress bar on a terminal and plain progress lines otherwise.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Settings;
use crate::indexing::{Indexer, Progress};

pub fn run(settings: Settings) -> anyhow::Result<()> {
    settings.apply_to_process();
    let catalog = super::open_owned(&settings)?;
    catalog.reset()?;
    let catalog = Arc::new(catalog);
    let indexer = Indexer::new(catalog.clone(), settings.index.clone())?;
    let started = Instant::now();
    let progress = Report::new(std::io::stderr().is_terminal());
    let summary = indexer.scan_all(&progress)?;
    progress.finish();
    super::print_out(&format!(
        "rebuilt {} in {:.1} s: {} files indexed, {} failed (see `quarry status`); peak memory {} MiB\n",
        settings.catalog_dir.display(),
        started.elapsed().as_secs_f64(),
        summary.indexed,
        summary.failed,
        peak_resident_kib() >> 10
    ))
}

/// This process's peak resident memory in KiB (not its reader workers': they
/// are processes of their own, each held to its own limit).
fn peak_resident_kib() -> u64 {
    // SAFETY: getrusage writes one rusage struct that we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    u64::try_from(usage.ru_maxrss).unwrap_or(0)
}

/// Progress as a bar (terminal) or a line every few seconds (logs, CI).
struct Report {
    bar: Option<ProgressBar>,
    total: AtomicUsize,
    done: AtomicUsize,
    last_line: Mutex<Instant>,
}

const LINE_EVERY: Duration = Duration::from_secs(2);

impl Report {
    fn new(terminal: bool) -> Report {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12} [{bar:40}] {pos}/{len} files ({per_sec}, {eta} left)",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        });
        Report {
            bar,
            total: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            last_line: Mutex::new(Instant::now()),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Report {
    fn found(&self, root_name: &str, to_index: usize) {
        let total = self.total.fetch_add(to_index, Ordering::Relaxed) + to_index;
        match &self.bar {
            Some(bar) => {
                bar.set_prefix(root_name.to_string());
                bar.set_length(total as u64);
            }
            None => eprintln!("quarry: root '{root_name}': {to_index} files to index"),
        }
    }

    fn indexed(&self, files: usize) {
        let done = self.done.fetch_add(files, Ordering::Relaxed) + files;
        match &self.bar {
            Some(bar) => bar.set_position(done as u64),
            None => {
                let mut last = self.last_line.lock().expect("progress lock");
                if last.elapsed() >= LINE_EVERY {
                    *last = Instant::now();
                    eprintln!(
                        "quarry: indexed {done}/{} files",
                        self.total.load(Ordering::Relaxed)
                    );
                }
            }
        }
    }
}
