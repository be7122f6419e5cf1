//! `raptor://{dataset_id}/nodes/{node_id}` resources: the text of a node of a
//! RAG dataset's tree, from the RAG engine's current view of the dataset.

use super::{Contents, ResourceError};
use crate::mcp::tools::Context;
use crate::rag::RagDataset;

pub const SCHEME: &str = "raptor://";
pub const TEMPLATE: &str = "raptor://{dataset_id}/nodes/{node_id}";

/// The URI of node `i` of a dataset.
pub fn node_uri(ds: &RagDataset, i: usize) -> String {
    format!("{SCHEME}{}/nodes/{}", ds.name, ds.node_id(i))
}

/// Reads a `raptor://` URI: the node's text.
pub fn read(ctx: &Context, uri: &str) -> Result<Contents, ResourceError> {
    let (dataset_id, node_id) = uri
        .strip_prefix(SCHEME)
        .and_then(|rest| rest.split_once("/nodes/"))
        .filter(|(d, n)| !d.is_empty() && !n.is_empty())
        .ok_or_else(|| {
            ResourceError::BadUri(format!(
                "'{}' is not a raptor:// node URI (expected raptor://<dataset>/nodes/<node id>)",
                uri.chars().take(120).collect::<String>()
            ))
        })?;
    let not_found = |why: String| ResourceError::NotFound {
        uri: uri.to_string(),
        why,
    };
    let rag = ctx
        .rag
        .as_ref()
        .ok_or_else(|| not_found("this quarry runs no RAG engine".into()))?;
    if !rag.has_dataset(dataset_id) {
        return Err(not_found(format!("no dataset named '{dataset_id}'")));
    }
    let ds = rag
        .dataset(dataset_id)
        .map_err(|e| ResourceError::Internal(e.to_string()))?;
    let i = ds
        .find(node_id)
        .ok_or_else(|| not_found(format!("no node '{node_id}' in dataset '{dataset_id}'")))?;
    Ok(Contents::Text {
        uri: node_uri(&ds, i),
        text: ds.nodes[i].text.clone(),
    })
}
