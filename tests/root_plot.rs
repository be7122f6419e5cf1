//! `plot: true` on compute_histogram and compute_histogram_2d through MCP: an
//! image item after the JSON text item holding a PNG (decoded here with the
//! `png` crate), the same bytes written under the export folder, and a text
//! rendering in structuredContent whose bars follow the counts; without
//! `plot`, none of it.

use crate::common;

use base64::Engine;
use common::{Client, Form, Sandbox, args, assert_valid, wait_indexed};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

const HZZ: &str = "root/uproot-HZZ.root";

/// The call's structured content and its PNG images, decoded from base64.
async fn call_with_images(client: &Client, tool: &str, arguments: Value) -> (Value, Vec<Vec<u8>>) {
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(arguments)))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0]
        .as_text()
        .expect("the JSON text item first");
    let json: Value = serde_json::from_str(&text.text).unwrap();
    assert_eq!(result.structured_content.as_ref(), Some(&json));
    assert_valid(&format!("{tool}.output.json"), &json);
    let images = result.content[1..]
        .iter()
        .map(|c| {
            let image = c.as_image().expect("only image items after the text");
            assert_eq!(image.mime_type, "image/png");
            base64::engine::general_purpose::STANDARD
                .decode(&image.data)
                .unwrap()
        })
        .collect();
    (json, images)
}

/// Width, height and the RGB bytes of a PNG.
fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histograms_come_with_a_picture_when_asked() {
    pictures_in(Form::TTree).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histograms_come_with_a_picture_when_asked_on_rntuple() {
    pictures_in(Form::RNTuple).await;
}

async fn pictures_in(form: Form) {
    let s = Sandbox::with_testdata_as(form);
    let client = s.mcp().await;
    wait_indexed(&client).await;

    let plain = json!({"path": HZZ, "tree": "events", "branch": "Muon_Px", "bins": 20, "range": [-100, 100]});
    let (v, images) = call_with_images(&client, "compute_histogram", plain.clone()).await;
    assert!(images.is_empty());
    assert!(v["data"].get("plot").is_none());

    let mut with_plot = plain.clone();
    with_plot["plot"] = json!(true);
    let (v, images) = call_with_images(&client, "compute_histogram", with_plot).await;
    assert_eq!(images.len(), 1);
    let (w, h, rgb) = decode(&images[0]);
    assert_eq!((w, h), (640, 400));
    // Something was drawn: bars in the plot's blue, and dark text.
    assert!(rgb.chunks(3).any(|p| p == [70, 110, 180]));
    assert!(rgb.chunks(3).any(|p| p[0] < 90 && p[1] < 90 && p[2] < 90));
    let path = v["data"]["plot"]["png"].as_str().unwrap();
    assert!(
        path.starts_with(s.catalog.join("exports").to_str().unwrap()),
        "{path}"
    );
    assert_eq!(std::fs::read(path).unwrap(), images[0]);

    // One text column per bin (20 bins), eighths of the largest count rounded
    // up, from ▁ to █ (blank for none).
    let text = v["data"]["plot"]["text"].as_str().unwrap();
    let bars: Vec<char> = text
        .lines()
        .next()
        .unwrap()
        .trim_matches('|')
        .chars()
        .collect();
    let counts: Vec<f64> = v["data"]["bin_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    assert_eq!(bars.len(), counts.len(), "{text}");
    let top = counts.iter().copied().fold(0.0, f64::max);
    const EIGHTHS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    for (bar, count) in bars.iter().zip(&counts) {
        let want = match *count {
            0.0 => ' ',
            c => EIGHTHS[(c * 8.0 / top).ceil() as usize - 1],
        };
        assert_eq!(*bar, want, "{count} of {top}: {text}");
    }
    let at_top = counts.iter().position(|&c| c == top).unwrap();
    assert_eq!(bars[at_top], '█');

    // The same request names the same file; another one another file.
    let mut again = plain.clone();
    again["plot"] = json!(true);
    let (v2, _) = call_with_images(&client, "compute_histogram", again).await;
    assert_eq!(v2["data"]["plot"]["png"], v["data"]["plot"]["png"]);

    let two = json!({"path": HZZ, "tree": "events", "x_branch": "MET_px", "y_branch": "MET_py",
                     "x_bins": 30, "y_bins": 30, "plot": true});
    let (v, images) = call_with_images(&client, "compute_histogram_2d", two).await;
    assert_eq!(images.len(), 1);
    assert_eq!(decode(&images[0]).0, 640);
    let text = v["data"]["plot"]["text"].as_str().unwrap();
    let grid: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(grid.len(), 12, "{text}");
    assert!(text.contains('@'), "{text}");
    assert_ne!(v["data"]["plot"]["png"], v2["data"]["plot"]["png"]);
}
