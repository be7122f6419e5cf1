//! HDF5 datasets whose data lies in other files are never read: external
//! storage (raw files the dataset names) and virtual datasets (mappings onto
//! datasets of other HDF5 files), whose targets libhdf5 would open by name,
//! outside the root. The files are written here through libhdf5 (the `hdf5`
//! crate), with targets in a folder beside the root: absolute paths and `../`
//! names. The targets hold values no answer may contain (7777.x in the raw file,
//! 5555.x in the HDF5 source); the expected refusals name the targets as they
//! were written.

use crate::common;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Client, Sandbox, assert_valid, call, wait_indexed};
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

/// Elements of every dataset written here.
const N: usize = 100;

/// A root (`data`) and a folder beside it (`outside`) holding the targets.
struct Layout {
    sandbox: Sandbox,
    outside: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let sandbox = Sandbox::new();
        let outside = sandbox.root.parent().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        // The raw file external storage points at: N doubles 7777.0, 7777.5, ...
        let secret: Vec<u8> = (0..N)
            .flat_map(|i| (7777.0 + i as f64 / 2.0).to_le_bytes())
            .collect();
        std::fs::write(outside.join("secret.bin"), secret).unwrap();
        // The HDF5 file a virtual dataset maps: /data = 5555.0, 5555.25, ...
        let source = hdf5::File::create(outside.join("source.h5")).unwrap();
        let values: Vec<f64> = (0..N).map(|i| 5555.0 + i as f64 / 4.0).collect();
        source
            .new_dataset_builder()
            .with_data(&values)
            .create("data")
            .unwrap();
        Layout { sandbox, outside }
    }

    fn abs(&self, name: &str) -> String {
        self.outside.join(name).to_string_lossy().into_owned()
    }

    fn uri(&self, file: &str, path: &str) -> String {
        format!(
            "h5://{}?path={path}",
            self.sandbox.root.join(file).display()
        )
    }
}

/// Writes `file` holding `/ext`: N doubles in external storage at `target`.
fn write_external(file: &Path, target: &str) {
    let f = hdf5::File::create(file).unwrap();
    f.new_dataset::<f64>()
        .shape(N)
        .external(target, 0, N * 8)
        .create("ext")
        .unwrap();
}

/// Writes `file` holding `/vds`: a virtual dataset of N doubles mapped onto
/// `/data` of `source`.
fn write_virtual(file: &Path, source: &str) {
    let f = hdf5::File::create(file).unwrap();
    f.new_dataset::<f64>()
        .virtual_map(source, "/data", N, .., N, ..)
        .shape(N)
        .create("vds")
        .unwrap();
}

/// Writes `file` holding `/vds`: a virtual dataset of N doubles, growing
/// without end, mapped onto `/data` of `source` by an unlimited selection
/// (count 1, block unlimited, as h5py writes `[0:h5py.h5s.UNLIMITED]`): to
/// learn its extent libhdf5 opens the source. Written through libhdf5's own
/// calls (the `hdf5` crate makes a selection that covers the extent `All`).
fn write_unlimited_virtual(file: &Path, source: &str) {
    use hdf5_sys::h5d::{H5Dclose, H5Dcreate2};
    use hdf5_sys::h5f::{H5F_ACC_TRUNC, H5Fclose, H5Fcreate};
    use hdf5_sys::h5p::{H5P_CLS_DATASET_CREATE, H5P_DEFAULT, H5Pclose, H5Pcreate, H5Pset_virtual};
    use hdf5_sys::h5s::{
        H5S_UNLIMITED, H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sselect_hyperslab,
    };
    let c = |s: &str| CString::new(s).unwrap();
    let (path, source, data, name) = (c(file.to_str().unwrap()), c(source), c("/data"), c("vds"));
    let _only_caller = hdf5_sys::LOCK.lock();
    let (dims, max) = ([N as u64], [H5S_UNLIMITED]);
    let (start, stride, count, block) = ([0u64], [1u64], [1u64], [H5S_UNLIMITED]);
    // SAFETY: arrays of rank 1 as each call expects; every id is checked and
    // closed; the lock is held.
    unsafe {
        let unlimited_space = || {
            let space = H5Screate_simple(1, dims.as_ptr(), max.as_ptr());
            assert!(space >= 0);
            let selected = H5Sselect_hyperslab(
                space,
                H5S_seloper_t::H5S_SELECT_SET,
                start.as_ptr(),
                stride.as_ptr(),
                count.as_ptr(),
                block.as_ptr(),
            );
            assert!(selected >= 0);
            space
        };
        let (vspace, sspace) = (unlimited_space(), unlimited_space());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_virtual(dcpl, vspace, source.as_ptr(), data.as_ptr(), sspace) >= 0);
        let f = H5Fcreate(path.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        assert!(f >= 0);
        let d = H5Dcreate2(
            f,
            name.as_ptr(),
            *hdf5_sys::h5t::H5T_NATIVE_DOUBLE,
            vspace,
            H5P_DEFAULT,
            dcpl,
            H5P_DEFAULT,
        );
        assert!(d >= 0);
        for (id, close) in [
            (d, H5Dclose as unsafe extern "C" fn(_) -> _),
            (dcpl, H5Pclose),
            (vspace, H5Sclose),
            (sspace, H5Sclose),
            (f, H5Fclose),
        ] {
            assert!(close(id) >= 0);
        }
    }
}

async fn resource(client: &Client, uri: &str) -> Value {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
        panic!("a text resource");
    };
    serde_json::from_str(text).unwrap()
}

/// Every way to read the dataset's data is refused with permission_denied
/// naming `route`; the metadata (resources/read, read_resource) shows the
/// layout and the targets; no answer holds the target's values.
async fn assert_refused(client: &Client, uri: &str, route: &str, layout: &str, targets: Value) {
    let mut seen = String::new();
    for (tool, args) in [
        (
            "read_dataset_slice",
            json!({"uri": uri, "slice_str": "0:40"}),
        ),
        ("get_dataset_stats", json!({"uri": uri})),
    ] {
        let (v, is_error) = call(client, tool, args).await;
        assert!(is_error, "{tool} read {uri}: {v}");
        assert_eq!(v["error"], "permission_denied", "{tool}: {v}");
        let message = v["message"].as_str().unwrap();
        assert!(message.contains(route), "{tool}: {message} lacks {route}");
        assert!(
            v["suggestion"].as_str().unwrap().contains("read_resource"),
            "{v}"
        );
        seen.push_str(&v.to_string());
    }
    let (v, is_error) = call(client, "read_resource", json!({"uri": uri})).await;
    assert!(!is_error, "{v}");
    assert_valid("read_resource.output.json", &v);
    let listed = resource(client, uri).await;
    assert_eq!(v["data"], listed);
    assert_eq!(listed["kind"], "dataset", "{listed}");
    assert_eq!(listed["layout"], layout, "{listed}");
    assert_eq!(listed["external_data"], targets, "{listed}");
    assert_eq!(listed["shape"], json!([N]), "{listed}");
    assert!(
        listed["note"]
            .as_str()
            .unwrap()
            .contains("permission_denied")
    );
    seen.push_str(&v.to_string());
    for outside_value in ["7777", "5555"] {
        assert!(
            !seen.contains(outside_value),
            "{outside_value} leaked: {seen}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_storage_outside_the_root_is_refused() {
    let l = Layout::new();
    let absolute = l.abs("secret.bin");
    let relative = "../outside/secret.bin";
    write_external(&l.sandbox.root.join("ext_abs.h5"), &absolute);
    write_external(&l.sandbox.root.join("ext_rel.h5"), relative);
    let client = l.sandbox.mcp().await;
    wait_indexed(&client).await;
    for (file, target) in [("ext_abs.h5", absolute.as_str()), ("ext_rel.h5", relative)] {
        assert_refused(
            &client,
            &l.uri(file, "/ext"),
            &format!("external storage → {target}"),
            "external_storage",
            json!([{"route": "external_storage", "file": target, "offset": 0, "size": N * 8}]),
        )
        .await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virtual_datasets_onto_files_outside_the_root_are_refused() {
    let l = Layout::new();
    let absolute = l.abs("source.h5");
    let relative = "../outside/source.h5";
    write_virtual(&l.sandbox.root.join("vds_abs.h5"), &absolute);
    // A relative source name is looked for beside the virtual dataset's file.
    write_virtual(&l.sandbox.root.join("vds_rel.h5"), relative);
    let client = l.sandbox.mcp().await;
    wait_indexed(&client).await;
    for (file, source) in [("vds_abs.h5", absolute.as_str()), ("vds_rel.h5", relative)] {
        assert_refused(
            &client,
            &l.uri(file, "/vds"),
            &format!("virtual dataset → {source}:/data"),
            "virtual",
            json!([{"route": "virtual", "file": source, "dataset": "/data"}]),
        )
        .await;
    }
    client.cancel().await.unwrap();
}

/// Whether some process has the FIFO at `path` open for reading (or is
/// blocked opening it): a non-blocking open for writing fails with ENXIO when
/// none has.
fn fifo_has_reader(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; the descriptor is closed at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
    if fd >= 0 {
        // SAFETY: a descriptor just opened.
        unsafe { libc::close(fd) };
    }
    fd >= 0
}

/// A virtual dataset with an unlimited mapping onto a FIFO outside the root:
/// libhdf5 would open the source to learn the extent (and block there, with
/// no writer), so indexing completes promptly only if nothing opens it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexing_never_opens_a_virtual_source() {
    let l = Layout::new();
    let fifo = l.outside.join("pipe.h5");
    let c = CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let target = fifo.to_string_lossy().into_owned();
    write_unlimited_virtual(&l.sandbox.root.join("vds_pipe.h5"), &target);
    let started = Instant::now();
    let client = l.sandbox.mcp().await;
    wait_indexed(&client).await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let uri = l.uri("vds_pipe.h5", "/vds");
    let listed = resource(&client, &uri).await;
    assert_eq!(listed["maxshape"], json!([null]), "{listed}");
    let started = Instant::now();
    assert_refused(
        &client,
        &uri,
        &format!("virtual dataset → {target}:/data"),
        "virtual",
        json!([{"route": "virtual", "file": target, "dataset": "/data"}]),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!fifo_has_reader(&fifo), "something opened the FIFO");
    client.cancel().await.unwrap();
}

/// The worker itself refuses, whatever the catalog says (a file replaced
/// since it was indexed reaches it unchecked by the tools).
#[test]
fn the_worker_refuses_datasets_kept_in_other_files() {
    use quarry::formats::FormatError;
    use quarry::formats::hdf5::isolated::{dataset_moments, read_slice, set_helper, tree_of};
    use quarry::formats::hdf5::slice::{parse, resolve};
    use quarry::formats::hdf5::{Entry, ExternalData};

    set_helper(env!("CARGO_BIN_EXE_quarry").into());
    let l = Layout::new();
    let secret = l.abs("secret.bin");
    let source = l.abs("source.h5");
    let ext = l.sandbox.root.join("ext.h5");
    let vds = l.sandbox.root.join("vds.h5");
    write_external(&ext, &secret);
    write_unlimited_virtual(&vds, &source);
    let sel = resolve(&parse("0:40").unwrap(), &[N as u64]).unwrap();
    let open = |p: &Path| std::fs::File::open(p).unwrap();
    for (file, path, route) in [
        (&ext, "/ext", format!("external storage → {secret}")),
        (&vds, "/vds", format!("virtual dataset → {source}:/data")),
    ] {
        let refused = |r: Result<String, FormatError>| match r {
            Err(FormatError::Refused(why)) => assert!(why.contains(&route), "{why}"),
            other => panic!("{path}: {other:?}"),
        };
        refused(read_slice(open(file), path, &sel, &|| false).map(|d| d.unwrap().data.to_string()));
        refused(
            dataset_moments(open(file), path, &sel, 64, &|| false, &|_, _| {})
                .map(|m| format!("{m:?}")),
        );
    }
    // The tree walk records the targets and the stated extent, opening none.
    let tree = tree_of(open(&vds)).unwrap();
    let Some(Entry::Dataset(info)) = tree
        .objects
        .iter()
        .find(|o| o.path == "/vds")
        .map(|o| &o.entry)
    else {
        panic!("no /vds in {tree:?}");
    };
    assert_eq!(info.layout, "virtual");
    assert_eq!(
        (info.shape.clone(), info.maxshape.clone()),
        (Some(vec![N as u64]), vec![None])
    );
    assert_eq!(
        info.external_data,
        vec![ExternalData::VirtualSource {
            file: source.clone(),
            dataset: "/data".into()
        }]
    );
}
