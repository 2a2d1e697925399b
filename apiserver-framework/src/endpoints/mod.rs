//! The HTTP layer of resources: paths, options, content negotiation, handlers and encodings.

pub mod also_authorize;
pub mod apply_patch;
pub mod audit_hook;
pub mod blocking;
pub mod body_checks;
pub mod field_manager;
pub mod handlers;
pub mod jsonpath;
pub mod negotiation;
#[doc(hidden)]
pub mod parse_count;
pub mod patch;
pub mod query;
pub mod request_info;
pub mod response;
pub mod scale;
pub mod strategic;
pub mod subresource;
pub mod table;
pub mod warning;
pub mod watch_timeout;
