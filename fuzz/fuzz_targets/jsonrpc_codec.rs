//! Feeds arbitrary bytes to quarry's JSON-RPC framing as a client's input: the
//! bytes are cut into lines with a small size cap (so over-long lines occur),
//! and each line is classified. Every line must be handed on, answered with an
//! error object carrying an `id`, or ignored; a panic or a hang is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quarry::mcp::codec::{Frame, Inbound, LineReader, classify};

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let input = tokio::io::BufReader::with_capacity(64, data);
        let mut lines = LineReader::new(input, 4096);
        loop {
            match lines.next_frame().await.expect("reading memory cannot fail") {
                Frame::Line(line) => {
                    assert!(line.len() <= 4096);
                    if let Inbound::Reply(answer) = classify(&line) {
                        assert!(answer.get("id").is_some(), "an error without an id");
                        assert!(answer["error"]["code"].is_i64());
                    }
                }
                Frame::TooLong(len) => assert!(len > 4096),
                Frame::End => break,
            }
        }
    });
});
