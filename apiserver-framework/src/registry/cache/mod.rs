//! Work done once and shared by every reader: the events of a change encoded once for all the
//! watchers of a store ([`encoded_events`]), converted once for all the watchers of a version
//! ([`converted_events`]), and the stored values known to decode, checked once per revision
//! ([`checked_values`]).
//!
//! # The invariant
//!
//! **An entry answers only for the very input it was made from.** Each cache looks its input
//! up by something cheaper than its contents, and keeps whatever makes that lookup name one
//! input for as long as the entry lives:
//!
//! - *by address and length* ([`converted_events`]; and an event's shared line, which is
//!   recognised as its own by the address of its object, in `crate::registry::watch::line`):
//!   the entry (or the event) holds the bytes it was made from alive, so while it is kept no
//!   other bytes can start at that address with that length. Addresses are compared, never
//!   contents, and an entry whose bytes are not the ones asked about is not used.
//! - *by revision* ([`encoded_events`]): a revision names one write of the storage; as one
//!   write may change several keys, the entry also holds its key, and a lookup of another key
//!   at the same revision is answered afresh, not from the entry.
//! - *by hash* ([`checked_values`]): a key's hash (foldhash, seeded at random per process and
//!   per table, so a client cannot choose colliding keys) together with its revision. Two keys
//!   would have to share the hash *and* the revision for a value to be taken as checked
//!   without being so; revisions name one write each, so that takes a collision between two
//!   keys of one multi-key transaction, which the framework never writes.
//!
//! When a cache cannot tell, it does the work again rather than guess; each is bounded and
//! forgets its oldest entries (or all of them), which costs only that work once more.

pub(crate) mod checked_values;
pub(crate) mod converted_events;
pub(crate) mod encoded_events;
