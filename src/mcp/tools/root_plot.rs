//! `plot: true` on the histogram tools: the PNG goes after the JSON text item
//! as an image item (for a person in a chat client), is written under the
//! export folder, and `data.plot` holds its path and a text rendering, since
//! most clients hand the model only `structuredContent`.

use std::io::Write;

use serde_json::json;

use super::Context;
use super::root_export::export_target;
use crate::mcp::response::ToolOutput;
use crate::roots::create_pending;

/// A stable 64-bit FNV-1a hash: the same request names the same file in every
/// run and version.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Writes `png` as `plots/<hash of key>.png` under the export folder; the
/// absolute path, or why it could not be written.
fn write_png(ctx: &Context, key: &str, png: &[u8]) -> Result<String, String> {
    let rel = format!("plots/{}-{:016x}.png", key_prefix(key), fnv1a(key));
    let (base, rel) = export_target(ctx, &rel).map_err(|e| e.message)?;
    let mut file = create_pending(&base, &rel).map_err(|e| e.to_string())?;
    file.write_all(png).map_err(|e| e.to_string())?;
    file.commit().map_err(|e| e.to_string())?;
    Ok(base.join(rel).display().to_string())
}

/// The tool's name, the start of the key (a readable file name).
fn key_prefix(key: &str) -> &str {
    key.split('|').next().unwrap_or("plot")
}

/// Adds a plot to a histogram's answer: `png` (or the drawing error), the
/// text rendering, and `key` (the request, which names the file).
pub(super) fn with_plot(
    ctx: &Context,
    mut out: ToolOutput,
    key: &str,
    png: Result<Vec<u8>, String>,
    text: String,
) -> ToolOutput {
    let written = png
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|bytes| write_png(ctx, key, bytes));
    out.data["plot"] = json!({
        "png": written.as_ref().ok(),
        "text": text,
    });
    if let Err(why) = &written {
        out = out.suggest(format!("The plot's PNG was not written: {why}"));
    }
    if let Ok(bytes) = png {
        out.images.push(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a's published test vectors.
    #[test]
    fn file_names_are_stable() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }
}
