//! Parsing request options from the query string, with upstream's 400/422 answers.

use crate::error::{ApiError, FieldError};
use crate::quote::go_quote;
use crate::registry::rest::continue_token;
use crate::registry::rest::options::{DeleteOptions, FieldValidation, ListOptions, WriteOptions};
use crate::selector::{FieldSelector, LabelSelector};

/// The decoded `key=value` pairs of a query string, in order.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Decodes a raw query string (without `?`).
    pub fn parse(raw: Option<&str>) -> Self {
        crate::endpoints::request_info::trace_reading("query");
        Query {
            pairs: raw
                .map(|q| {
                    form_urlencoded::parse(q.as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> impl Iterator<Item = &str> {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter: `true`/`1` (and a bare key) are true, `false`/`0` false.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some("" | "true" | "1" | "True") => Ok(Some(true)),
            Some("false" | "0" | "False") => Ok(Some(false)),
            Some(v) => Err(ApiError::bad_request(format!(
                "invalid value for {key}: {v:?}: strconv.ParseBool: parsing {v:?}: invalid syntax"
            ))),
        }
    }

    /// An integer parameter; a malformed one answers 400 with the text of Go's `ParseInt`
    /// error, which is all upstream's query decoding reports.
    fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>().map_err(|e| {
                    let why = match e.kind() {
                        std::num::IntErrorKind::PosOverflow
                        | std::num::IntErrorKind::NegOverflow => "value out of range",
                        _ => "invalid syntax",
                    };
                    ApiError::bad_request(format!(
                        "strconv.ParseInt: parsing {}: {why}",
                        go_quote(v)
                    ))
                })
            })
            .transpose()
    }

    /// Whether `watch=true|1`.
    pub fn is_watch(&self) -> Result<bool, ApiError> {
        Ok(self.bool("watch")?.unwrap_or(false))
    }

    /// `dryRun`: only `All` is valid (the values, for upstream's `Unsupported value: [...]`).
    fn dry_run(&self) -> Result<bool, Vec<String>> {
        let values: Vec<String> = self.all("dryRun").map(str::to_string).collect();
        if values.iter().all(|v| v == "All") {
            Ok(!values.is_empty())
        } else {
            Err(values)
        }
    }

    /// List and watch options.
    pub fn list_options(&self, watch: bool) -> Result<ListOptions, ApiError> {
        // Upstream decodes the selectors while converting the query into its ListOptions and
        // answers a parse error as a 400 whose message is the parser's text, unchanged.
        let label_selector = LabelSelector::parse(self.get("labelSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let field_selector = FieldSelector::parse(self.get("fieldSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let limit = self.int("limit")?.unwrap_or(0).max(0) as usize;
        // Negative is 0; beyond the longest watch is the longest watch.
        let max_timeout = crate::registry::store::MAX_WATCH_TIMEOUT.as_secs();
        let timeout_seconds = self
            .int("timeoutSeconds")?
            .map(|t| u64::try_from(t).unwrap_or(0).min(max_timeout));
        let opts = ListOptions {
            label_selector,
            field_selector,
            resource_version: self.get("resourceVersion").unwrap_or("").to_string(),
            resource_version_match: self.get("resourceVersionMatch").unwrap_or("").to_string(),
            limit,
            continue_token: self.get("continue").unwrap_or("").to_string(),
            timeout_seconds,
            allow_watch_bookmarks: self.bool("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: self.bool("sendInitialEvents")?,
        };
        validate_list_options(&opts, watch)?;
        Ok(opts)
    }

    /// Create, update and patch options; `kind` names the options (`CreateOptions`,
    /// `UpdateOptions`, `PatchOptions`) in upstream's 422 for values it does not support
    /// (`ValidateCreateOptions` and its twins: `dryRun`, `fieldValidation`).
    pub fn write_options(&self, kind: &str) -> Result<WriteOptions, ApiError> {
        let mut errors = Vec::new();
        let field_validation = match self.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => FieldValidation::Warn,
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            other => {
                errors.push(FieldError::not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                ));
                FieldValidation::Warn
            }
        };
        let dry_run = self.dry_run().unwrap_or_else(|values| {
            errors.insert(0, FieldError::not_supported("dryRun", values, &["All"]));
            false
        });
        if !errors.is_empty() {
            return Err(ApiError::invalid_with(
                &format!("{kind}.meta.k8s.io"),
                "meta.k8s.io",
                kind,
                "",
                &errors,
            ));
        }
        Ok(WriteOptions {
            dry_run,
            field_manager: self.get("fieldManager").unwrap_or("").to_string(),
            field_validation,
            force: self.bool("force")?,
            apply: false,
        })
    }

    /// Delete options from the query (a body, if any, is merged by the caller).
    pub fn delete_options(&self) -> Result<DeleteOptions, ApiError> {
        let dry_run = self.dry_run().map_err(|values| {
            let bad = values.into_iter().find(|v| v != "All").unwrap_or_default();
            ApiError::bad_request(format!(
                "dryRun: Unsupported value: {bad:?}: supported values: \"All\""
            ))
        })?;
        Ok(DeleteOptions {
            dry_run,
            grace_period_seconds: self.int("gracePeriodSeconds")?,
            precondition_uid: None,
            precondition_resource_version: None,
            propagation_policy: self.get("propagationPolicy").map(str::to_string),
            orphan_dependents: self.bool("orphanDependents")?,
            ignore_store_read_error_with_cluster_breaking_potential: self
                .bool("ignoreStoreReadErrorWithClusterBreakingPotential")?,
        })
    }
}

/// Upstream's ListOptions validation (422, in upstream's order of checks), then the checks
/// its storage makes before reading (400): the continue token decodes, no resourceVersion
/// with a continue token, and a list's resourceVersion is a number.
fn validate_list_options(opts: &ListOptions, watch: bool) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let m = opts.resource_version_match.as_str();
    let path = "resourceVersionMatch";
    if watch {
        if opts.send_initial_events.is_some() && m != "NotOlderThan" {
            errs.push(FieldError::forbidden(
                path,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !m.is_empty() {
            if opts.send_initial_events.is_none() {
                errs.push(FieldError::forbidden(
                    path,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                errs.push(FieldError::not_supported(path, m, &["NotOlderThan"]));
            }
            if !opts.continue_token.is_empty() {
                errs.push(FieldError::forbidden(
                    path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if !m.is_empty() {
            if opts.resource_version.is_empty() {
                errs.push(FieldError::forbidden(
                    path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !opts.continue_token.is_empty() {
                errs.push(FieldError::forbidden(
                    path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                errs.push(FieldError::not_supported(
                    path,
                    m,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && opts.resource_version == "0" {
                errs.push(FieldError::forbidden(
                    path,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if opts.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid_with(
            "ListOptions.meta.k8s.io",
            "meta.k8s.io",
            "ListOptions",
            "",
            &errs,
        ));
    }
    if !opts.continue_token.is_empty() {
        continue_token::decode(&opts.continue_token)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        if !matches!(opts.resource_version.as_str(), "" | "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
    } else if !watch && !matches!(opts.resource_version.as_str(), "" | "0") {
        parse_resource_version(&opts.resource_version)?;
    }
    Ok(())
}

/// A resourceVersion as the storage parses it: an unsigned 64-bit decimal. Anything else
/// answers upstream's 400, e.g. `invalid resource version: resourceVersion: Invalid value:
/// "abc": strconv.ParseUint: parsing "abc": invalid syntax`.
pub fn parse_resource_version(rv: &str) -> Result<u64, ApiError> {
    let digits = !rv.is_empty() && rv.bytes().all(|c| c.is_ascii_digit());
    let parsed = if digits { rv.parse::<u64>().ok() } else { None };
    parsed.ok_or_else(|| {
        // Only digits that do not fit are out of range; a sign or anything else is syntax.
        let why = if digits {
            "value out of range"
        } else {
            "invalid syntax"
        };
        let quoted = go_quote(rv);
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
        ))
    })
}
