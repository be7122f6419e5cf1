//! `h5://` resources, answered from the catalog alone: the URI syntax, the
//! listing of HDF5 files, and the JSON of a group, dataset or link. Shared by
//! MCP's `resources/*` requests (through `super::read`) and by the HDF5 tools.
//!
//! URI: `h5://<absolute file path>?path=<path in the file>` (`path` defaults to
//! `/`), or for a remote root's file `h5://<its URL>?path=...`; `%XX` escapes are decoded in both parts, and `%`, `?`, `#` and
//! control characters are escaped when quarry writes a URI.

use serde_json::{Map, Value, json};

use super::ResourceError;
use crate::catalog::FileStatus;
use crate::catalog::hdf5::{HDF5_ALIASES, HDF5_OBJECTS};
use crate::formats::Kind;
use crate::formats::hdf5::{Attribute, DatasetInfo, Entry, Object};
use crate::mcp::tools::Context;
use crate::roots::RootId;

pub const SCHEME: &str = "h5://";
pub const TEMPLATE: &str = "h5://{+file}{?path}";

/// A parsed `h5://` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H5Uri {
    pub file: String,
    /// Absolute, normalised path inside the file.
    pub path: String,
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "escapes that are not UTF-8".to_string())
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' | '?' | '#' | '&' => out.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The URI of an object of a file.
pub fn uri_of(file: &str, path: &str) -> String {
    format!(
        "{SCHEME}{}?path={}",
        percent_encode(file),
        percent_encode(path)
    )
}

/// A path inside an HDF5 file, made absolute and normalised; `..` is refused.
pub fn normalize_object_path(path: &str) -> Result<String, String> {
    let mut parts = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => return Err("'..' is not allowed in an HDF5 object path".into()),
            p => parts.push(p),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

pub fn parse_uri(uri: &str) -> Result<H5Uri, String> {
    let rest = uri.strip_prefix(SCHEME).ok_or_else(|| {
        format!(
            "'{}' is not an h5:// URI (expected h5://<absolute file path>?path=<object path>)",
            short(uri)
        )
    })?;
    if rest.contains('#') {
        return Err("an h5:// URI has no fragment ('#')".into());
    }
    let (file, query) = rest.split_once('?').unwrap_or((rest, ""));
    let file = percent_decode(file)?;
    // A remote root's file is named by its URL (h5://https://host/data/run.h5?path=/).
    if !file.starts_with('/') && !crate::remote::looks_like_url(&file) {
        return Err(format!(
            "the file part of '{}' must be an absolute path or a remote file's URL \
             (h5:///data/run.h5?path=/)",
            short(uri)
        ));
    }
    let mut path = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("path", value)) if path.is_none() => path = Some(percent_decode(value)?),
            Some(("path", _)) => return Err("the query gives 'path' twice".into()),
            _ => {
                return Err(format!(
                    "unknown query parameter '{}': only 'path' is understood",
                    short(pair)
                ));
            }
        }
    }
    let path = path.unwrap_or_else(|| "/".into());
    if path.contains('\0') {
        return Err("the object path contains a NUL byte".into());
    }
    Ok(H5Uri {
        path: normalize_object_path(&path)?,
        file,
    })
}

fn short(text: &str) -> String {
    text.chars().take(120).collect()
}

/// An HDF5 file the catalog knows.
pub struct KnownHdf5File {
    pub root_id: RootId,
    pub rel: String,
    /// Absolute path (under the root's canonical folder).
    pub abs: String,
    pub id: u64,
    /// The identity of the version the catalog describes.
    pub fingerprint: u64,
}

/// Finds the file of a URI in the catalog (its path judged as every tool path).
pub fn known_hdf5_file(
    ctx: &Context,
    uri: &str,
    file: &str,
) -> Result<KnownHdf5File, ResourceError> {
    let roots = ctx.catalog.roots();
    let (root_id, rel) = roots
        .resolve_lexically(file, None)
        .map_err(ResourceError::Refused)?;
    let not_found = |why: String| ResourceError::NotFound {
        uri: uri.to_string(),
        why,
    };
    let record = ctx
        .catalog
        .record(root_id, &rel)
        .map_err(|e| ResourceError::Internal(e.to_string()))?
        .ok_or_else(|| not_found(format!("'{file}' is not an HDF5 file quarry has indexed")))?;
    if record.info.kind != Kind::Hdf5 {
        return Err(not_found(format!(
            "'{file}' is not an HDF5 file (quarry indexed it as {})",
            record.info.kind
        )));
    }
    if let FileStatus::Failed(why) = &record.info.status {
        return Err(ResourceError::Unreadable(format!(
            "'{file}' cannot be read: {why}"
        )));
    }
    Ok(KnownHdf5File {
        abs: roots.list()[root_id]
            .canonical
            .join(&rel)
            .to_string_lossy()
            .into_owned(),
        root_id,
        rel,
        id: record.id,
        fingerprint: record.info.fingerprint,
    })
}

/// The object stored at exactly `path` (or under it as another hard link's name).
fn stored(ctx: &Context, id: u64, path: &str) -> Result<Option<Object>, ResourceError> {
    let internal = |e: anyhow::Error| ResourceError::Internal(e.to_string());
    if let Some(o) = ctx
        .catalog
        .kind_row::<Object>(HDF5_OBJECTS, id, path.as_bytes())
        .map_err(internal)?
    {
        return Ok(Some(o));
    }
    let Some(canonical) = ctx
        .catalog
        .kind_row::<String>(HDF5_ALIASES, id, path.as_bytes())
        .map_err(internal)?
    else {
        return Ok(None);
    };
    ctx.catalog
        .kind_row::<Object>(HDF5_OBJECTS, id, canonical.as_bytes())
        .map_err(internal)
}

/// The object at `path`, reached through soft links in its parent groups (the
/// object itself is returned as it is, a link when it is one).
pub fn locate(ctx: &Context, id: u64, path: &str) -> Result<Option<Object>, ResourceError> {
    let mut path = path.to_string();
    for _ in 0..16 {
        if let Some(o) = stored(ctx, id, &path)? {
            return Ok(Some(o));
        }
        // Rewrite the longest prefix that is a soft link (to its target) or
        // another hard link's name of a group (to the group's stored path).
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let mut rewritten = None;
        for n in (1..parts.len()).rev() {
            let prefix = format!("/{}", parts[..n].join("/"));
            let rest = parts[n..].join("/");
            if let Some(canonical) = ctx
                .catalog
                .kind_row::<String>(HDF5_ALIASES, id, prefix.as_bytes())
                .map_err(|e| ResourceError::Internal(e.to_string()))?
            {
                rewritten = Some(format!("{canonical}/{rest}"));
                break;
            }
            if let Some(Object {
                entry: Entry::SoftLink { target, .. },
                ..
            }) = stored(ctx, id, &prefix)?
            {
                let parent = format!("/{}", parts[..n - 1].join("/"));
                let base = crate::formats::hdf5::absolute_target(&parent, &target);
                rewritten = Some(format!("{base}/{rest}"));
                break;
            }
        }
        match rewritten {
            Some(p) => path = normalize_object_path(&p).map_err(ResourceError::BadUri)?,
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// The object a path leads to with every soft link followed (a dataset to
/// read); `Ok(None)` when it leads nowhere in the file.
pub fn follow(ctx: &Context, id: u64, path: &str) -> Result<Option<Object>, ResourceError> {
    let mut path = path.to_string();
    for _ in 0..16 {
        match locate(ctx, id, &path)? {
            Some(Object {
                entry: Entry::SoftLink { target, .. },
                path: link,
                ..
            }) => {
                let parent = link.rsplit_once('/').map_or("/", |(p, _)| p);
                path = crate::formats::hdf5::absolute_target(parent, &target);
            }
            other => return Ok(other),
        }
    }
    Ok(None)
}

/// The attribute list as JSON: name -> value (null when not stored), with the
/// details of each beside.
fn attributes_json(attrs: &[Attribute]) -> (Value, Vec<Value>) {
    let mut values = Map::new();
    let mut details = Vec::new();
    for a in attrs {
        let value = match (&a.value, a.truncated) {
            (Some(text), false) => serde_json::from_str(text).unwrap_or(Value::Null),
            (Some(text), true) => Value::String(format!("{text}…")),
            (None, _) => Value::Null,
        };
        values.insert(a.name.clone(), value);
        let mut d = json!({"name": a.name, "dtype": a.dtype.numpy(), "shape": a.shape});
        if a.truncated {
            d["truncated"] = json!(true);
            d["note"] = json!(if a.value.is_some() {
                "value cut to its first 1024 characters"
            } else {
                "value too large to store (over 64 KiB)"
            });
        }
        details.push(d);
    }
    (Value::Object(values), details)
}

pub fn dataset_json(d: &DatasetInfo) -> Map<String, Value> {
    let (attributes, attribute_details) = attributes_json(&d.attributes);
    let compression = d.compression();
    let elements = d
        .shape
        .as_ref()
        .map(|s| s.iter().product::<u64>())
        .unwrap_or(0);
    let Value::Object(mut map) = json!({
        "shape": d.shape,
        "maxshape": d.shape.as_ref().map(|_| &d.maxshape),
        "dtype": d.dtype.numpy(),
        "type": d.dtype.describe(),
        "size": elements,
        "nbytes": d.logical_size,
        "storage_size": d.storage_size,
        "layout": d.layout,
        "chunks": d.chunks,
        "compression": compression.map(|f| f.name.clone()),
        "compression_opts": compression.and_then(|f| (f.name == "gzip").then(|| f.settings.first().copied()).flatten()),
        "filters": d.filters.iter().map(|f| json!({"name": f.name, "id": f.id, "settings": f.settings})).collect::<Vec<_>>(),
        "fill_value": d.fill_value.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()),
        "attributes": attributes,
        "attribute_details": attribute_details,
    }) else {
        unreachable!("a JSON object literal")
    };
    if let (Some(extent), Some(written)) = (d.chunks_in_extent(), d.chunks_written) {
        map.insert(
            "chunk_storage".into(),
            chunk_storage_json(extent, written, d.storage_size),
        );
    }
    if d.external_data_total > 0 {
        map.extend(external_data_json(d));
    }
    map
}

/// How much of a chunked dataset is written: chunks the extent spans, chunks
/// written (the rest read as the fill value), their share, and the bytes they
/// take in the file.
fn chunk_storage_json(extent: u64, written: u64, allocated: u64) -> Value {
    json!({
        "chunks": extent,
        "chunks_written": written,
        "fraction_written": (extent > 0).then(|| written as f64 / extent as f64),
        "allocated_bytes": allocated,
    })
}

/// The files a dataset's data lies in (external storage, virtual sources),
/// and why quarry does not read it.
fn external_data_json(d: &DatasetInfo) -> Map<String, Value> {
    use crate::formats::hdf5::ExternalData;
    let targets: Vec<Value> = d
        .external_data
        .iter()
        .map(|t| match t {
            ExternalData::Storage { file, offset, size } => {
                json!({"route": "external_storage", "file": file, "offset": offset, "size": size})
            }
            ExternalData::VirtualSource { file, dataset } => {
                json!({"route": "virtual", "file": file, "dataset": dataset})
            }
        })
        .collect();
    let mut map = Map::new();
    map.insert("external_data".into(), json!(targets));
    if d.external_data_total > d.external_data.len() as u64 {
        map.insert("external_data_total".into(), json!(d.external_data_total));
    }
    map.insert(
        "note".into(),
        json!("the data lies in the files listed, which libhdf5 opens by name: quarry reads none of it \
(read_dataset_slice and get_dataset_stats answer permission_denied)"),
    );
    map
}

/// The JSON `resources/read` returns for an object.
pub fn object_json(file: &KnownHdf5File, uri: &str, o: &Object) -> Value {
    let mut out = json!({
        "uri": uri,
        "file": file.abs,
        "path": o.path,
        "kind": o.entry.kind().as_str(),
    });
    if !o.aliases.is_empty() {
        out["other_paths"] = json!(o.aliases);
    }
    let map = out.as_object_mut().expect("object");
    match &o.entry {
        Entry::Group {
            members,
            attributes,
        } => {
            let (values, details) = attributes_json(attributes);
            map.insert("attributes".into(), values);
            map.insert("attribute_details".into(), json!(details));
            let members: Vec<Value> = members
                .iter()
                .map(|m| {
                    let child = if o.path == "/" {
                        format!("/{}", m.name)
                    } else {
                        format!("{}/{}", o.path, m.name)
                    };
                    let mut v = json!({"name": m.name, "kind": m.kind.as_str(), "uri": uri_of(&file.abs, &child)});
                    if m.kind == crate::formats::hdf5::MemberKind::Dataset {
                        v["shape"] = json!(m.shape);
                        v["dtype"] = json!(m.dtype);
                    }
                    v
                })
                .collect();
            map.insert("members".into(), json!(members));
        }
        Entry::Dataset(d) => map.extend(dataset_json(d)),
        Entry::Datatype { dtype } => {
            map.insert("dtype".into(), json!(dtype.numpy()));
            map.insert("type".into(), dtype.describe());
        }
        Entry::SoftLink { target, dangling } => {
            map.insert("link_type".into(), json!("SoftLink"));
            map.insert("target".into(), json!(target));
            map.insert("dangling".into(), json!(dangling));
            let parent = o
                .path
                .rsplit_once('/')
                .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
            let absolute = crate::formats::hdf5::absolute_target(parent, target);
            map.insert("target_uri".into(), json!(uri_of(&file.abs, &absolute)));
        }
        Entry::ExternalLink { file: f, path } => {
            map.insert("link_type".into(), json!("ExternalLink"));
            map.insert("target".into(), json!({"file": f, "path": path}));
        }
    }
    out
}

/// Reads a resource URI from the catalog.
pub fn read(ctx: &Context, uri: &str) -> Result<Value, ResourceError> {
    let parsed = parse_uri(uri).map_err(ResourceError::BadUri)?;
    let file = known_hdf5_file(ctx, uri, &parsed.file)?;
    let object = locate(ctx, file.id, &parsed.path)?.ok_or_else(|| ResourceError::NotFound {
        uri: uri.to_string(),
        why: format!("no object '{}' in {}", parsed.path, file.abs),
    })?;
    Ok(object_json(&file, uri, &object))
}

/// Every HDF5 file quarry indexed without error: (absolute path, file name), sorted.
pub fn files(ctx: &Context) -> Vec<(String, String)> {
    let roots = ctx.catalog.roots();
    let mut out = Vec::new();
    for (i, root) in roots.list().iter().enumerate() {
        let snap = ctx.catalog.files().snapshot(i);
        for j in 0..snap.len() {
            let e = snap.entry(j);
            if e.kind == Kind::Hdf5 && !e.failed {
                let abs = root
                    .canonical
                    .join(snap.rel(j))
                    .to_string_lossy()
                    .into_owned();
                out.push((abs, snap.name(j).to_string()));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse_and_round_trip() {
        let u = parse_uri("h5:///data/run 1.h5?path=/a/b").unwrap();
        assert_eq!(
            (u.file.as_str(), u.path.as_str()),
            ("/data/run 1.h5", "/a/b")
        );
        assert_eq!(parse_uri("h5:///d/x.h5").unwrap().path, "/");
        assert_eq!(parse_uri("h5:///d/x.h5?path=a//b/").unwrap().path, "/a/b");
        let odd = uri_of("/d/we?ird%#.h5", "/g/x&y");
        let back = parse_uri(&odd).unwrap();
        assert_eq!(
            (back.file.as_str(), back.path.as_str()),
            ("/d/we?ird%#.h5", "/g/x&y")
        );
        for bad in [
            "file:///x.h5",
            "h5://relative.h5?path=/",
            "h5:///x.h5?path=/../etc",
            "h5:///x.h5?mode=w",
            "h5:///x.h5?path=/a&path=/b",
            "h5:///x.h5#frag",
            "h5:///x%zz.h5",
        ] {
            assert!(parse_uri(bad).is_err(), "{bad}");
        }
    }
}
