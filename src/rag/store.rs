//! A document's tree in the catalog: one `rag_nodes` row per node, keyed by
//! (file id, node index), written after the document's rows are committed and
//! only while the file still has the fingerprint the tree was built from.

use crate::catalog::documents::RAG_NODES;
use crate::catalog::{Catalog, KindRow, encode};
use crate::roots::RootId;

use super::embed::Embedder;
use super::tree::{Node, document_tree};

/// Builds and stores the tree of one indexed document; returns the number of
/// nodes written (0 when the file is gone, changed, failed or empty).
pub fn build_and_store(
    catalog: &Catalog,
    root_id: RootId,
    rel: &str,
    fingerprint: u64,
    model: Option<&Embedder>,
) -> anyhow::Result<usize> {
    let Some(record) = catalog.record(root_id, rel)? else {
        return Ok(0);
    };
    if record.info.fingerprint != fingerprint || record.info.status.is_failed() {
        return Ok(0);
    }
    let Some(meta) = catalog.document_meta(record.id)? else {
        return Ok(0);
    };
    let text = catalog.document_text(record.id)?;
    let page_first_lines: Vec<u32> = meta.pages.iter().map(|p| p.first_line).collect();
    let nodes = document_tree(record.id, &text, &page_first_lines, model);
    let rows: Vec<KindRow> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| KindRow {
            table: RAG_NODES,
            key: (i as u32).to_be_bytes().to_vec(),
            value: encode(n),
        })
        .collect();
    if catalog.add_rows(root_id, rel, fingerprint, &rows)? {
        Ok(rows.len())
    } else {
        Ok(0)
    }
}

/// Whether a document already has its tree stored, with vectors of `dims`
/// dimensions (0: a lexical tree; a tree with vectors serves lexically too).
pub fn has_tree(catalog: &Catalog, file_id: u64, dims: usize) -> bool {
    catalog
        .kind_rows::<Node>(RAG_NODES, file_id, &0u32.to_be_bytes())
        .is_ok_and(|rows| {
            rows.first()
                .is_some_and(|n| dims == 0 || n.vector.len() == dims)
        })
}

/// A document's stored tree, in node order.
pub fn load_tree(catalog: &Catalog, file_id: u64) -> anyhow::Result<Vec<Node>> {
    catalog.kind_rows(RAG_NODES, file_id, b"")
}
