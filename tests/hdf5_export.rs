//! export_dataset through MCP: slices of tests/data/hdf5/filters.h5 written as
//! npy, csv and parquet and read back (npy and CSV by the small readers below,
//! Parquet by arrow-rs's reader, and by NumPy and pyarrow when python3 has
//! them) equal to NumPy's result of the same slice (tests/fixtures/hdf5/filters.json,
//! from scripts/fixtures/hdf5_filters.py); a dataset far over
//! read_dataset_slice's element cap exported whole; paths outside the export
//! folder and non-numeric datasets refused.

use crate::common;

use std::path::{Path, PathBuf};

use arrow_array::{Array, FixedSizeListArray, Float32Array, Float64Array, Int32Array};
use common::{Client, Sandbox, assert_valid, call, parquet_batches, wait_indexed};
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hdf5/filters.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn sandbox() -> Sandbox {
    let s = Sandbox::new();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hdf5");
    for name in ["filters.h5", "kinds.h5"] {
        std::fs::copy(data.join(name), s.root.join(name)).unwrap();
    }
    common::test_filter::write_with_test_filter(&s.root.join("test_filter.h5"));
    s
}

fn uri(s: &Sandbox, file: &str, path: &str) -> String {
    format!("h5://{}?path={path}", s.root.join(file).display())
}

async fn export(client: &Client, args: Value) -> Value {
    let (v, is_error) = call(client, "export_dataset", args.clone()).await;
    assert!(!is_error, "{args}: {v}");
    assert_valid("export_dataset.output.json", &v);
    v
}

/// A `.npy` file read by hand: its type string, shape and elements as f64.
fn read_npy(path: &Path) -> (String, Vec<u64>, Vec<f64>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    assert_eq!((start + len) % 64, 0, "header padded to 64 bytes");
    let header = std::str::from_utf8(&bytes[start..start + len]).unwrap();
    let descr = header
        .split("'descr': '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    assert!(header.contains("'fortran_order': False"), "{header}");
    let shape_text = header
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let shape: Vec<u64> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let data = &bytes[start + len..];
    let values = match descr {
        "<f8" => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        "<f4" => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "<i4" => data
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "<i2" => data
            .chunks_exact(2)
            .map(|c| f64::from(i16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "|b1" => data.iter().map(|&b| f64::from(b)).collect(),
        other => panic!("unexpected descr {other}"),
    };
    (descr.to_string(), shape, values)
}

/// A CSV file's header and its cells as f64 (`nan` as NaN), row by row.
fn read_csv(path: &Path) -> (String, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(|c| c.parse::<f64>().unwrap()).collect())
        .collect();
    (header, rows)
}

/// A Parquet file's one column, flattened, as f64, and the rows' count.
fn read_parquet(path: &Path, name: &str) -> (usize, Vec<f64>) {
    let mut rows = 0;
    let mut out = Vec::new();
    for batch in parquet_batches(path) {
        rows += batch.num_rows();
        let mut col = batch.column_by_name(name).unwrap().clone();
        if let Some(list) = col.as_any().downcast_ref::<FixedSizeListArray>() {
            col = list.values().slice(
                list.offset() * list.value_length() as usize,
                list.len() * list.value_length() as usize,
            );
        }
        if let Some(v) = col.as_any().downcast_ref::<Float64Array>() {
            out.extend(v.values().iter().copied());
        } else if let Some(v) = col.as_any().downcast_ref::<Float32Array>() {
            out.extend(v.values().iter().map(|&x| f64::from(x)));
        } else if let Some(v) = col.as_any().downcast_ref::<Int32Array>() {
            out.extend(v.values().iter().map(|&x| f64::from(x)));
        } else {
            panic!("unexpected type {:?}", col.data_type());
        }
    }
    (rows, out)
}

/// NumPy's values (null for NaN) equal to what was read back.
fn same(got: &[f64], want: &Value, what: &str) {
    let want = want.as_array().unwrap();
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        match w.as_f64() {
            Some(w) => assert_eq!(*g, w, "{what}[{i}]"),
            None => assert!(g.is_nan(), "{what}[{i}]: {g} for NaN"),
        }
    }
}

fn python_has_numpy_and_pyarrow() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import numpy, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// NumPy's `np.load` and pyarrow's reader agree with the expected values.
fn check_with_python(npy: &Path, parquet: &Path, shape: &Value, values: &Value) {
    let script = r#"
import json, sys
import numpy as np, pyarrow.parquet as pq
npy, parquet, shape, values = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
want = np.array([np.nan if v is None else v for v in values], dtype=float).reshape(shape)
a = np.load(npy)
assert list(a.shape) == shape, (a.shape, shape)
assert np.array_equal(a.astype(float), want, equal_nan=True)
col = pq.read_table(parquet).column(0).combine_chunks()
flat = col.flatten() if hasattr(col, "flatten") and col.type.num_fields else col
got = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=float)
assert np.array_equal(got, want.ravel(), equal_nan=True)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(npy)
        .arg(parquet)
        .arg(shape.to_string())
        .arg(values.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_read_back_as_numpy_slices() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let exports = s.catalog.join("exports");
    let python = python_has_numpy_and_pyarrow();
    if !python {
        eprintln!("python3 lacks numpy/pyarrow: their read-back is skipped");
    }
    for (k, case) in fixture()["exports"].as_array().unwrap().iter().enumerate() {
        let dataset = case["dataset"].as_str().unwrap();
        let slice = case["slice"].as_str().unwrap();
        let what = format!("{dataset}[{slice}]");
        let shape: Vec<u64> = serde_json::from_value(case["shape"].clone()).unwrap();
        let name = dataset.rsplit('/').next().unwrap();
        let mut written = Vec::new();
        for format in ["npy", "csv", "parquet"] {
            let v = export(
                &client,
                json!({"uri": uri(&s, "filters.h5", dataset), "slice_str": slice,
                       "output_format": format, "output_path": format!("case{k}/out.{format}")}),
            )
            .await;
            let path = PathBuf::from(v["data"]["output_path"].as_str().unwrap());
            assert_eq!(
                path,
                exports
                    .canonicalize()
                    .unwrap()
                    .join(format!("case{k}/out.{format}"))
            );
            assert_eq!(v["data"]["shape"], case["shape"], "{what}");
            assert_eq!(v["data"]["dtype"], case["dtype"], "{what}");
            assert_eq!(
                v["data"]["elements_written"],
                shape.iter().product::<u64>(),
                "{what}"
            );
            assert_eq!(
                v["data"]["size_bytes"],
                std::fs::metadata(&path).unwrap().len()
            );
            written.push(path);
        }
        let (descr, npy_shape, values) = read_npy(&written[0]);
        assert_eq!(descr, case["dtype"].as_str().unwrap(), "{what}");
        assert_eq!(npy_shape, shape, "{what}");
        same(&values, &case["values"], &format!("{what} npy"));
        let (header, rows) = read_csv(&written[1]);
        assert_eq!(
            rows.len() as u64,
            shape.first().copied().unwrap_or(1),
            "{what} csv rows"
        );
        let width = shape.iter().skip(1).product::<u64>() as usize;
        assert!(
            rows.iter().all(|r| r.len() == width.max(1)),
            "{what} csv width"
        );
        if shape.len() <= 1 {
            assert_eq!(header, name);
        } else {
            assert_eq!(header.split(',').nth(1).unwrap(), format!("{name}[1]"));
        }
        same(&rows.concat(), &case["values"], &format!("{what} csv"));
        let (parquet_rows, flat) = read_parquet(&written[2], name);
        assert_eq!(
            parquet_rows as u64,
            shape.first().copied().unwrap_or(1),
            "{what} parquet rows"
        );
        same(&flat, &case["values"], &format!("{what} parquet"));
        if python {
            check_with_python(&written[0], &written[2], &case["shape"], &case["values"]);
        }
    }
    client.cancel().await.unwrap();
}

/// Big-endian integers and booleans of kinds.h5 (scripts/fixtures/hdf5_files.py
/// writes `i2_be` as arange(-6, 6) big-endian, `flags` as [T, F, T, T, F]) come
/// out in the host's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_are_written_in_the_hosts_order() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = export(
        &client,
        json!({"uri": uri(&s, "kinds.h5", "/numbers/i2_be"), "output_format": "npy", "output_path": "i2.npy"}),
    )
    .await;
    let (descr, shape, values) = read_npy(Path::new(v["data"]["output_path"].as_str().unwrap()));
    assert_eq!((descr.as_str(), shape), ("<i2", vec![12]));
    assert_eq!(values, (-6..6).map(f64::from).collect::<Vec<_>>());
    let v = export(
        &client,
        json!({"uri": uri(&s, "kinds.h5", "/numbers/flags"), "output_format": "csv", "output_path": "flags.csv"}),
    )
    .await;
    let text = std::fs::read_to_string(v["data"]["output_path"].as_str().unwrap()).unwrap();
    assert_eq!(text, "flags\ntrue\nfalse\ntrue\ntrue\nfalse\n");
    client.cancel().await.unwrap();
}

/// A dataset of 3,000,000 float64 (30 times read_dataset_slice's cap), each
/// its index, written whole in blocks: every value checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_past_the_slice_cap_is_exported_whole() {
    const N: usize = 3_000_000;
    let s = sandbox();
    {
        let values: Vec<f64> = (0..N).map(|i| i as f64).collect();
        let f = hdf5::File::create(s.root.join("big.h5")).unwrap();
        f.new_dataset_builder()
            .with_data(&values)
            .chunk(100_000)
            .deflate(1)
            .create("ramp")
            .unwrap();
    }
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let v = export(
        &client,
        json!({"uri": uri(&s, "big.h5", "/ramp"), "output_format": "npy", "output_path": "ramp.npy"}),
    )
    .await;
    assert_eq!(v["data"]["elements_written"], N);
    let (_, shape, values) = read_npy(Path::new(v["data"]["output_path"].as_str().unwrap()));
    assert_eq!(shape, vec![N as u64]);
    assert!(values.iter().enumerate().all(|(i, &x)| x == i as f64));
    // The same through a step: every third element, backwards.
    let v = export(
        &client,
        json!({"uri": uri(&s, "big.h5", "/ramp"), "slice_str": "::-3", "output_format": "parquet",
               "output_path": "ramp.parquet"}),
    )
    .await;
    let (rows, values) = read_parquet(
        Path::new(v["data"]["output_path"].as_str().unwrap()),
        "ramp",
    );
    assert_eq!(rows, N / 3);
    assert!(
        values
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (N - 1 - 3 * i) as f64)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_exports_are_refused_with_the_specs_codes() {
    let s = sandbox();
    let client = s.mcp().await;
    wait_indexed(&client).await;
    let outside = tempfile::tempdir().unwrap();
    let grid = uri(&s, "filters.h5", "/zstd/grid");
    let cases = [
        (
            json!({"uri": grid, "output_format": "npy", "output_path": "../escape.npy"}),
            "permission_denied",
        ),
        (
            json!({"uri": grid, "output_format": "npy",
                   "output_path": outside.path().join("x.npy").display().to_string()}),
            "permission_denied",
        ),
        (
            json!({"uri": grid, "output_format": "xlsx", "output_path": "x.xlsx"}),
            "invalid_arguments",
        ),
        (
            json!({"uri": grid, "slice_str": "1:2, 99", "output_format": "npy", "output_path": "x.npy"}),
            "index_out_of_range",
        ),
        (
            json!({"uri": uri(&s, "kinds.h5", "/text/fixed"), "output_format": "csv", "output_path": "s.csv"}),
            "unsupported_type",
        ),
        (
            json!({"uri": uri(&s, "test_filter.h5", "/filtered"), "output_format": "npy", "output_path": "b.npy"}),
            "unsupported_filter",
        ),
    ];
    for (args, code) in cases {
        let (v, is_error) = call(&client, "export_dataset", args.clone()).await;
        assert!(is_error, "{args}: {v}");
        assert_eq!(v["error"], code, "{args}: {v}");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!s.catalog.join("escape.npy").exists());
    // A failed export leaves no file, not even a temporary one.
    let leftovers: Vec<_> = walk(&s.catalog.join("exports"));
    assert!(leftovers.is_empty(), "{leftovers:?}");
    client.cancel().await.unwrap();
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() { walk(&p) } else { vec![p] }
        })
        .collect()
}
