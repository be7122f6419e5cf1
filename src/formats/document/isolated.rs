//! PDFs read in worker processes (`formats::worker`). pdf-extract and lopdf
//! inflate every FlateDecode stream whole, with no limit (a page of a few
//! kilobytes can hold gigabytes), recurse through the page tree and the
//! content's objects, and panic on malformed files; a panic is caught, but
//! a memory bomb, a stack overflow or a loop would take the serving process
//! down. In a `quarry __pdf-worker` they cost only the worker, held to the
//! workers' address-space limit and a time limit, and become the file's error.

use std::fs::File;
use std::io::{Read, Seek};
use std::time::Duration;

use super::{Document, FormatError, check_pdf_size, pdf};
use crate::formats::worker::{self, Service, decode_answer, encode_answer};

/// The argument that makes the helper binary serve PDF requests.
pub const WORKER_ARG: &str = "__pdf-worker";

/// The PDF workers: a document may take two minutes before its worker is
/// killed (pdf-extract reads about a hundred pages a second).
static SERVICE: Service = Service::new(
    WORKER_ARG,
    "the PDF reader",
    "the PDF reader",
    Duration::from_secs(120),
    &[],
);

/// Reads a PDF (already checked for its header): in a worker when a helper
/// is set, otherwise in this process.
pub(super) fn read_pdf(file: File) -> Result<Document, FormatError> {
    if !worker::isolated() {
        return pdf::read(&whole(file)?);
    }
    match SERVICE.ask(&[], file, &|| false, &|_, _| {})? {
        Some(out) => decode_answer(&out, "the PDF reader"),
        None => Err(FormatError::Io("the PDF worker was stopped".into())),
    }
}

/// The file's bytes (the PDF readers parse from memory).
fn whole(mut file: File) -> Result<Vec<u8>, FormatError> {
    let size = file.metadata()?.len();
    check_pdf_size(size)?;
    file.rewind()?;
    let mut bytes = Vec::with_capacity(size as usize);
    // Never more than the limit, even from a file that grew since.
    file.take(super::MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)?;
    check_pdf_size(bytes.len() as u64)?;
    Ok(bytes)
}

/// The worker's side: reads each PDF handed to it, within the limits its
/// arguments set, until its input ends.
pub fn worker_main() -> std::process::ExitCode {
    worker::serve(|_, file, _| encode_answer(whole(file).and_then(|bytes| pdf::read(&bytes))))
}
