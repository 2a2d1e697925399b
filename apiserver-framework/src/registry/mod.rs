//! The registry layer: per-resource REST storage, the generic store and its strategy, request
//! options and the server's scheme of groups.
//!
//! - [`rest`]: the REST interface the HTTP layer calls, [`rest::RestStorage`], with what its
//!   methods take and give (request options, continue tokens), custom subresources, computed
//!   resources and storages that wrap others;
//! - [`store`]: the generic [`store::Store`] every `#[derive(ApiResource)]` type is served by,
//!   its [`store::strategy::Strategy`] hooks and the serialized objects it keeps;
//! - [`versions`]: a kind served in several versions, and the conversions between them;
//! - `watch`: a storage watch turned into the events a client sees, and their lines;
//! - `cache`: the work done once and shared by every reader (events encoded or converted per
//!   change, values known to decode), under one written invariant;
//! - [`field_validation`]: unknown and duplicate fields of write bodies;
//! - the server's scheme: [`group::Group`] as a server's builder receives resources,
//!   [`scheme::Registry`] of every served resource and [`typed::TypedResource`] access to one.

pub(crate) mod cache;
pub mod field_validation;
pub(crate) mod group;
pub mod rest;
pub mod scheme;
pub mod store;
pub mod typed;
pub mod versions;
pub(crate) mod watch;
