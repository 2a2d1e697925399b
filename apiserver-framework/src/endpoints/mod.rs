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
#[cfg(feature = "testing")]
pub mod field_manager;
#[cfg(not(feature = "testing"))]
pub(crate) mod field_manager;
#[cfg(feature = "testing")]
pub mod handlers;
#[cfg(not(feature = "testing"))]
pub(crate) mod handlers;
#[cfg(feature = "testing")]
pub mod jsonpath;
#[cfg(not(feature = "testing"))]
pub(crate) mod jsonpath;
pub(crate) mod list_body;
#[cfg(feature = "testing")]
pub mod negotiation;
#[cfg(not(feature = "testing"))]
pub(crate) mod negotiation;
#[cfg(feature = "testing")]
pub mod patch;
#[cfg(not(feature = "testing"))]
pub(crate) mod patch;
pub mod query;
#[cfg(feature = "testing")]
pub mod request_info;
#[cfg(not(feature = "testing"))]
pub(crate) mod request_info;
pub(crate) mod response;
pub(crate) mod scale;
#[cfg(feature = "testing")]
pub mod strategic;
#[cfg(not(feature = "testing"))]
pub(crate) mod strategic;
pub(crate) mod subresource;
pub(crate) mod table;
#[cfg(feature = "testing")]
pub mod warning;
#[cfg(not(feature = "testing"))]
pub(crate) mod warning;
pub(crate) mod watch_body;
pub(crate) mod watch_timeout;
