//! What a request says besides its body: the path, the query and its options, headers.

use std::time::Duration;

use apiserver_framework::duration::{self, GoDuration};
use apiserver_framework::endpoints::field_manager;
use apiserver_framework::endpoints::negotiation::{
    body_format, negotiate, negotiate_watch, parse_accept,
};
use apiserver_framework::endpoints::patch::PatchKind;
use apiserver_framework::endpoints::query::{Query, parse_resource_version};
use apiserver_framework::endpoints::request_info::{self, ApiPath, ResourcePath};
use apiserver_framework::registry::rest::continue_token;
use apiserver_framework::registry::rest::options::WriteOptions;

use super::{assert_client_error, text};

/// Prints a resource path the way a client builds it.
fn print_path(r: &ResourcePath) -> String {
    let mut out = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    if r.legacy_watch {
        out.push_str("/watch");
    }
    if let Some(ns) = &r.namespace {
        out.push_str(&format!("/namespaces/{ns}"));
    }
    out.push('/');
    out.push_str(&r.resource);
    for part in [&r.name, &r.subresource].into_iter().flatten() {
        out.push('/');
        out.push_str(part);
    }
    out
}

/// Parses a request path; a resource path prints to a path that parses to the same one, and
/// no segment is empty or holds a `/`.
pub fn request_path(data: &[u8]) {
    let input = text(data);
    let Some(parsed) = request_info::parse(&input) else {
        return;
    };
    if let ApiPath::Resource(r) = &parsed {
        let segments = [Some(&r.version), Some(&r.resource), r.namespace.as_ref()]
            .into_iter()
            .chain([r.name.as_ref(), r.subresource.as_ref()])
            .flatten();
        for s in segments {
            assert!(
                !s.is_empty() && !s.contains('/'),
                "{input:?}: segment {s:?}"
            );
        }
        let printed = print_path(r);
        assert_eq!(
            request_info::parse(&printed).as_ref(),
            Some(&parsed),
            "{input:?} printed as {printed:?}"
        );
    }
}

/// Decodes a query string into list, watch, write and delete options; every refusal is a 4xx.
pub fn query_options(data: &[u8]) {
    let input = text(data);
    let query = Query::parse(Some(&input));
    for watch in [false, true] {
        if let Err(e) = query.list_options(watch) {
            assert_client_error(&e, &input);
        }
    }
    if let Err(e) = query.is_watch() {
        assert_client_error(&e, &input);
    }
    if let Err(e) = query.write_options("CreateOptions") {
        assert_client_error(&e, &input);
    }
    match query.delete_options() {
        Ok(opts) => {
            if let Err(e) = opts.validate() {
                assert_client_error(&e, &input);
            }
        }
        Err(e) => assert_client_error(&e, &input),
    }
}

/// Parses a resourceVersion: a parsed one prints back to a value that parses to it; a refusal
/// is a 400.
pub fn resource_version(data: &[u8]) {
    let input = text(data);
    match parse_resource_version(&input) {
        Ok(rv) => {
            assert!(input.bytes().all(|b| b.is_ascii_digit()), "{input:?}");
            assert_eq!(parse_resource_version(&rv.to_string()).ok(), Some(rv));
        }
        Err(e) => assert_eq!(e.code, 400, "{input:?}: {}", e.message),
    }
}

/// Parses a Go duration (`?timeout=`, flags); a parsed one prints (`1h2m3.5s`) to text that
/// parses to it, up to the float arithmetic of the parser (a nanosecond per 2^52).
pub fn go_duration(data: &[u8]) {
    let input = text(data);
    let Ok(d) = duration::parse(&input) else {
        return;
    };
    let printed = GoDuration(d).to_string();
    let again = duration::parse(&printed)
        .unwrap_or_else(|e| panic!("{input:?} printed as {printed:?}, which fails: {e}"));
    let diff = again.abs_diff(d);
    let tolerance = Duration::from_nanos(1 + (d.as_nanos() >> 50) as u64);
    assert!(
        diff <= tolerance,
        "{input:?} = {d:?} printed as {printed:?} = {again:?}"
    );
}

/// Decodes a continue token; a decoded one encodes to a token that decodes to the same
/// revision and key. Encoding a revision and key taken from the input decodes back too.
pub fn continue_token(data: &[u8]) {
    let input = text(data);
    if let Ok((rv, key)) = continue_token::decode(&input) {
        let token = match rv {
            Some(rv) => continue_token::encode(rv, &key),
            None => continue_token::encode_latest(&key),
        };
        assert_eq!(
            continue_token::decode(&token),
            Ok((rv, key.clone())),
            "{input:?} re-encoded as {token:?}"
        );
    }
    // A key the store would return (rooted, clean) and a revision, both from the input.
    let rv = data
        .iter()
        .fold(1u64, |a, b| a.wrapping_mul(31).wrapping_add(*b as u64))
        % (1 << 62)
        + 1;
    let segments: Vec<&str> = input
        .split('/')
        .filter(|s| !s.is_empty() && *s != "." && *s != ".." && !s.contains('\0'))
        .collect();
    let key = format!("/{}", segments.join("/"));
    let token = continue_token::encode(rv, &key);
    assert_eq!(
        continue_token::decode(&token),
        Ok((Some(rv), key.clone())),
        "{key:?} at {rv} encoded as {token:?}"
    );
}

/// Negotiates Accept and Content-Type headers (the input is `accept\nincludeObject=v`);
/// refusals are 4xx.
pub fn negotiation(data: &[u8]) {
    let input = text(data);
    let (accept, include) = match input.split_once("\nincludeObject=") {
        Some((a, i)) => (a, Some(i)),
        None => (input.as_str(), None),
    };
    let _ = parse_accept(accept);
    for result in [
        negotiate(Some(accept), include),
        negotiate_watch(Some(accept), include),
    ] {
        if let Err(e) = result {
            assert_client_error(&e, &input);
        }
    }
    if let Err(e) = body_format(Some(accept)) {
        assert_eq!(e.code, 415, "{input:?}");
    }
    if let Err(e) = PatchKind::from_content_type(accept) {
        assert_eq!(e.code, 415, "{input:?}");
    }
}

/// Checks a `fieldManager` (the input) for writes and each patch type, and defaults the
/// manager from a user agent (also the input); refusals are 422 and a default is at most 128
/// bytes.
pub fn field_manager(data: &[u8]) {
    let input = text(data);
    let mut opts = WriteOptions {
        field_manager: input.clone(),
        ..WriteOptions::default()
    };
    if let Err(e) = field_manager::check_write("CreateOptions", &mut opts.clone(), Some(&input)) {
        assert_eq!(e.code, 422, "{input:?}");
    }
    for kind in [
        PatchKind::Json,
        PatchKind::Merge,
        PatchKind::Strategic,
        PatchKind::Apply,
    ] {
        for force in [None, Some(true)] {
            opts.force = force;
            if let Err(e) = field_manager::check_patch(kind, &mut opts.clone(), Some(&input)) {
                assert_eq!(e.code, 422, "{input:?}");
            }
        }
    }
    let default = field_manager::default_manager(Some(&input));
    assert!(
        default.len() <= field_manager::MAX_FIELD_MANAGER_LENGTH,
        "{input:?}"
    );
    assert!(!default.contains('/'), "{input:?}");
}
