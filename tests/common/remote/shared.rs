//! The plain servers every test of this binary that only reads shares: one
//! xrootd and one nginx serving one folder, and one moto with one bucket,
//! each started at its first use and killed when the test process exits
//! (`libc::atexit`; none outlives the binary). The folder holds the test
//! data as copied (`testdata/`, and `testdata-rntuple/` in the RNTuple
//! form), and a folder per sandbox with its own content (`sandbox-N/`); the
//! bucket holds the same under the same prefixes (the TTree form under
//! `data/`). Tests that change what a server serves (a server stopped, its
//! state reset) start their own.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::{Form, copy_tree, repo_testdata};
use super::{Moto, Nginx, Xrootd, moto_server, readable_by_all};

/// The bucket of the shared moto.
pub const BUCKET: &str = "quarry-test";

static FOLDER: OnceLock<PathBuf> = OnceLock::new();
static NGINX: OnceLock<Nginx> = OnceLock::new();
static XROOTD: OnceLock<Xrootd> = OnceLock::new();
static MOTO: OnceLock<Moto> = OnceLock::new();
static TESTDATA: [OnceLock<()>; 2] = [OnceLock::new(), OnceLock::new()];
static MOTO_TESTDATA: [OnceLock<()>; 2] = [OnceLock::new(), OnceLock::new()];
static NEXT_SANDBOX: AtomicUsize = AtomicUsize::new(0);

/// The temporary folder holding the served folder, made at first use;
/// it and the servers go at exit.
fn base() -> &'static Path {
    FOLDER.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("quarry-servers")
            .tempdir()
            .unwrap()
            .keep();
        std::fs::create_dir(dir.join("served")).unwrap();
        // SAFETY: registers a plain function, run once at exit.
        assert_eq!(unsafe { libc::atexit(stop_at_exit) }, 0);
        dir
    })
}

/// The folder the shared xrootd and nginx serve.
pub fn served() -> PathBuf {
    base().join("served")
}

/// Kills the shared servers and removes their folders: run by the C
/// library at exit, after the tests (a test failing exits so too).
extern "C" fn stop_at_exit() {
    let pids = [
        NGINX.get().map(|n| n.child.id()),
        XROOTD.get().map(|x| x.child.id()),
        MOTO.get().map(|m| m.child.id()),
    ];
    for pid in pids.into_iter().flatten() {
        // SAFETY: kill(2) and waitpid(2) on our own child's id.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
    }
    for dir in [
        NGINX.get().map(|n| n.dir.path().to_path_buf()),
        XROOTD.get().map(|x| x.dir.path().to_path_buf()),
        MOTO.get().map(|m| m.log.path().to_path_buf()),
        FOLDER.get().cloned(),
    ]
    .into_iter()
    .flatten()
    {
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&dir);
    }
}

pub fn nginx() -> &'static Nginx {
    base();
    NGINX.get_or_init(|| Nginx::serve(&served()))
}

pub fn xrootd() -> &'static Xrootd {
    base();
    XROOTD.get_or_init(|| Xrootd::serve(&served()))
}

/// The shared moto, with its bucket made (`moto_server` found: check
/// it first).
pub fn moto() -> &'static Moto {
    base();
    MOTO.get_or_init(|| {
        let binary = moto_server().expect("moto_server (check moto_server() first)");
        Moto::start(&binary, BUCKET)
    })
}

fn form_index(form: Form) -> usize {
    match form {
        Form::TTree => 0,
        Form::RNTuple => 1,
    }
}

/// The served folder's copy of the test data in `form`, made once:
/// `testdata/` or `testdata-rntuple/`.
pub fn testdata(form: Form) -> String {
    let name = match form {
        Form::TTree => "testdata",
        Form::RNTuple => "testdata-rntuple",
    };
    TESTDATA[form_index(form)].get_or_init(|| {
        // Made aside and renamed: a test never sees it half-copied.
        let aside = base().join(format!("{name}.partial"));
        std::fs::create_dir(&aside).unwrap();
        fill_as(form, &aside);
        let folder = served().join(name);
        std::fs::rename(&aside, &folder).unwrap();
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            readable_by_all(&folder);
        }
    });
    format!("{name}/")
}

/// The test data in `form`, as `Sandbox::with_testdata_as` copies it.
fn fill_as(form: Form, into: &Path) {
    copy_tree(&repo_testdata(), into);
    if form == Form::RNTuple {
        for entry in std::fs::read_dir(repo_testdata().join("root")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(copy) = form.source(&format!("testdata/root/{name}")) {
                std::fs::copy(copy, into.join("root").join(&name)).unwrap();
            }
        }
    }
}

/// The shared bucket's prefix holding the test data in `form`, uploaded
/// once: `data/` (the TTree form) or `data-rntuple/`.
pub fn moto_testdata(form: Form) -> String {
    let prefix = match form {
        Form::TTree => "data",
        Form::RNTuple => "data-rntuple",
    };
    MOTO_TESTDATA[form_index(form)].get_or_init(|| {
        let folder = tempfile::tempdir().unwrap();
        fill_as(form, folder.path());
        moto().upload(BUCKET, prefix, folder.path());
    });
    format!("{prefix}/")
}

/// A new name for a sandbox's own folder or prefix: `sandbox-N`.
pub fn sandbox_name() -> String {
    format!("sandbox-{}", NEXT_SANDBOX.fetch_add(1, Ordering::Relaxed))
}
