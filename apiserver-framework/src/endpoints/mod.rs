//! The HTTP layer of resources: paths, options, content negotiation, handlers and encodings.

pub(crate) mod also_authorize;
pub(crate) mod apply_patch;
pub(crate) mod audit_hook;
pub(crate) mod blocking;
pub(crate) mod body_checks;
pub(crate) mod connect_session;
pub mod field_manager;
pub mod handlers;
pub mod jsonpath;
pub(crate) mod list_body;
pub mod negotiation;
#[doc(hidden)]
pub mod patch;
pub mod query;
pub mod request_info;
pub(crate) mod response;
pub(crate) mod scale;
pub mod strategic;
pub(crate) mod subresource;
pub(crate) mod table;
pub mod warning;
pub(crate) mod watch_body;
pub(crate) mod watch_timeout;
