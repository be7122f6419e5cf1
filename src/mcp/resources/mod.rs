//! quarry's MCP resources, one scheme per kind: `h5://` (HDF5 objects, from the
//! catalog; `h5.rs`) and `raptor://` (RAG tree nodes, from the RAG engine;
//! `raptor.rs`). `read` dispatches a URI on its scheme for both `resources/read`
//! and the `read_resource` tool; `list_page` and `templates` answer
//! `resources/list` and `resources/templates/list` for the schemes served.

pub mod h5;
pub mod raptor;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, Resource, ResourceContents, ResourceTemplate,
};
use serde_json::{Value, json};

use super::response::ToolError;
use super::tools::{Context, Toolset};
use crate::roots::PathError;

/// Files per `resources/list` page.
pub const PAGE: usize = 100;

/// Why a resource cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceError {
    /// The URI does not parse: a protocol error saying why.
    BadUri(String),
    /// The file path is refused (outside the roots, traversal, ...).
    Refused(PathError),
    /// No such file, object or node: MCP's resource-not-found (-32002).
    NotFound {
        uri: String,
        why: String,
    },
    /// The file failed to index.
    Unreadable(String),
    Internal(String),
}

/// MCP's resource-not-found error code.
pub const RESOURCE_NOT_FOUND: i32 = -32002;

/// What reading a resource gives: the JSON of an `h5://` object, or the text
/// of a `raptor://` node.
#[derive(Debug, Clone, PartialEq)]
pub enum Contents {
    Json(Value),
    Text { uri: String, text: String },
}

impl Contents {
    /// As the one item of a `resources/read` result.
    pub fn into_resource(self, uri: String) -> ResourceContents {
        match self {
            Contents::Json(v) => {
                ResourceContents::text(v.to_string(), uri).with_mime_type("application/json")
            }
            Contents::Text { uri, text } => {
                ResourceContents::text(text, uri).with_mime_type("text/plain")
            }
        }
    }

    /// As the `read_resource` tool's data: an `h5://` object's JSON as it is
    /// (the model reads structure, not JSON in a string), a text resource as
    /// the `contents` list `resources/read` gives.
    pub fn into_tool_data(self) -> Value {
        match self {
            Contents::Json(v) => v,
            Contents::Text { uri, text } => json!({
                "contents": [{ "uri": uri, "mimeType": "text/plain", "text": text }]
            }),
        }
    }
}

/// Whether the server offers any resources (the HDF5 or RAG toolset is on).
pub fn served(ctx: &Context) -> bool {
    Toolset::Resources.is_on(&ctx.settings.toolsets)
}

fn on(ctx: &Context, set: Toolset) -> bool {
    ctx.settings.toolsets.contains(&set)
}

/// Reads any quarry resource URI, dispatching on its scheme.
pub fn read(ctx: &Context, uri: &str) -> Result<Contents, ResourceError> {
    let off = |what: &str| ResourceError::NotFound {
        uri: uri.to_string(),
        why: format!("this quarry does not serve {what} (its toolset is off)"),
    };
    if uri.starts_with(h5::SCHEME) {
        if !on(ctx, Toolset::Hdf5) {
            return Err(off("h5:// resources"));
        }
        return h5::read(ctx, uri).map(Contents::Json);
    }
    if uri.starts_with(raptor::SCHEME) {
        if !on(ctx, Toolset::Rag) {
            return Err(off("raptor:// resources"));
        }
        return raptor::read(ctx, uri);
    }
    let scheme = uri.split_once("://").map_or("", |(s, _)| s);
    Err(ResourceError::BadUri(format!(
        "unknown resource scheme '{}': quarry serves h5://<absolute file path>?path=<object path> and \
raptor://<dataset>/nodes/<node id>",
        scheme.chars().take(40).collect::<String>()
    )))
}

/// One page of `resources/list`: the HDF5 files (each its root group), from
/// `cursor` on. RAG nodes are not listed (there are many, and they change with
/// every rebuilt tree); they are read through their URIs.
pub fn list_page(ctx: &Context, cursor: Option<&str>) -> Result<ListResourcesResult, McpError> {
    if !on(ctx, Toolset::Hdf5) {
        return Ok(ListResourcesResult::default());
    }
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| McpError::invalid_params(format!("invalid cursor '{c}'"), None))?,
    };
    let files = h5::files(ctx);
    let page: Vec<Resource> = files
        .iter()
        .skip(start)
        .take(PAGE)
        .map(|(abs, name)| {
            Resource::new(h5::uri_of(abs, "/"), name.clone())
                .with_description(format!("HDF5 file {abs}: its root group"))
                .with_mime_type("application/json")
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(page);
    if start + PAGE < files.len() {
        result.next_cursor = Some((start + PAGE).to_string());
    }
    Ok(result)
}

/// `resources/templates/list`: the template of each scheme served.
pub fn templates(ctx: &Context) -> ListResourceTemplatesResult {
    let mut list = Vec::new();
    if on(ctx, Toolset::Hdf5) {
        list.push(
            ResourceTemplate::new(h5::TEMPLATE, "HDF5 object")
                .with_description(
                    "A group, dataset or link of an HDF5 file: file is its absolute path, path the object's path in it (default /)",
                )
                .with_mime_type("application/json"),
        );
    }
    if on(ctx, Toolset::Rag) {
        list.push(
            ResourceTemplate::new(raptor::TEMPLATE, "RAPTOR tree node")
                .with_description(
                    "The text of a node of a RAG dataset's tree (list_datasets gives the datasets, rag_retrieve the nodes)",
                )
                .with_mime_type("text/plain"),
        );
    }
    ListResourceTemplatesResult::with_all_items(list)
}

/// A resource problem as the protocol error MCP prescribes.
pub fn mcp_error(uri: &str, e: ResourceError) -> McpError {
    match e {
        ResourceError::BadUri(why) => McpError::invalid_params(
            format!("invalid resource URI: {why}"),
            Some(json!({ "uri": uri })),
        ),
        ResourceError::Refused(p) => McpError::invalid_params(
            p.to_string(),
            Some(json!({ "uri": uri, "error": ToolError::from_path(&p).code })),
        ),
        ResourceError::NotFound { why, .. } => McpError::resource_not_found(
            format!("resource not found: {why}"),
            Some(json!({ "uri": uri })),
        ),
        ResourceError::Unreadable(why) => {
            McpError::internal_error(why, Some(json!({ "uri": uri })))
        }
        ResourceError::Internal(why) => McpError::internal_error(why, None),
    }
}

/// A resource problem as the tool error the model can act on.
pub fn tool_error(e: ResourceError) -> ToolError {
    match e {
        ResourceError::BadUri(why) => ToolError::new(
            "invalid_uri",
            why,
            "Use h5://<absolute file path>?path=<object path> (from list_files(kind='hdf5') or find_datasets) or \
raptor://<dataset>/nodes/<node id> (from rag_retrieve)",
        ),
        ResourceError::Refused(p) => ToolError::from_path(&p),
        ResourceError::NotFound { uri, why } => {
            let suggestion = if uri.starts_with(raptor::SCHEME) {
                "raptor:// node URIs come from rag_retrieve; list_datasets gives the dataset ids"
            } else {
                "Read the file's root group (read_resource with ?path=/) to see its members, or search with find_datasets"
            };
            ToolError::new("resource_not_found", why, suggestion)
                .details(json!({ "code": RESOURCE_NOT_FOUND, "uri": uri }))
        }
        ResourceError::Unreadable(why) => ToolError::new(
            "corrupted_file",
            why,
            "Verify the file's integrity; index_status() lists files that failed to index",
        ),
        ResourceError::Internal(why) => ToolError::internal(why),
    }
}
