//! The HTTP layer of resources: paths, options, content negotiation, handlers and encodings.
//!
//! Only [`query`] is public: the rest serves the handlers. The parsers of client input
//! (negotiation, patches, request paths, field managers, JSONPath, warnings) are public with the
//! `testing` feature, for the workspace's tests and fuzz targets that feed them any input.

pub(crate) mod also_authorize;
pub(crate) mod apply_patch;
pub(crate) mod audit_hook;
pub(crate) mod blocking;
pub(crate) mod body_checks;
pub(crate) mod connect_session;
pub(crate) mod list_body;
pub mod query;
pub(crate) mod response;
pub(crate) mod scale;
pub(crate) mod subresource;
pub(crate) mod table;
pub(crate) mod watch_body;
pub(crate) mod watch_metrics;
pub(crate) mod watch_timeout;
// The parsers of client input, for the tests and fuzz targets that feed them any input.
internal_modules!(
    field_manager,
    handlers,
    jsonpath,
    negotiation,
    patch,
    request_info,
    strategic,
    warning,
);
