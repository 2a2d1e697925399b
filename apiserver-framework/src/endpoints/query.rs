//! Parsing request options from the query string, with upstream's 400/422 answers.

use crate::error::ApiError;
use crate::registry::options::{DeleteOptions, FieldValidation, ListOptions, WriteOptions};
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::strategy::FieldError;

/// The decoded `key=value` pairs of a query string, in order.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Decodes a raw query string (without `?`).
    pub fn parse(raw: Option<&str>) -> Self {
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

    fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "invalid value for {key}: {v:?}: strconv.ParseInt: parsing {v:?}: invalid syntax"
                    ))
                })
            })
            .transpose()
    }

    /// Whether `watch=true|1`.
    pub fn is_watch(&self) -> Result<bool, ApiError> {
        Ok(self.bool("watch")?.unwrap_or(false))
    }

    /// `dryRun`: only `All` is valid.
    fn dry_run(&self) -> Result<bool, ApiError> {
        let mut dry = false;
        for v in self.all("dryRun") {
            if v == "All" {
                dry = true;
            } else {
                return Err(ApiError::bad_request(format!(
                    "dryRun: Unsupported value: {v:?}: supported values: \"All\""
                )));
            }
        }
        Ok(dry)
    }

    /// List and watch options.
    pub fn list_options(&self, watch: bool) -> Result<ListOptions, ApiError> {
        let label_selector = LabelSelector::parse(self.get("labelSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let field_selector = FieldSelector::parse(self.get("fieldSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let limit = self.int("limit")?.unwrap_or(0).max(0) as usize;
        let timeout_seconds = self.int("timeoutSeconds")?.map(|t| t.max(0) as u64);
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

    /// Create, update and patch options.
    pub fn write_options(&self) -> Result<WriteOptions, ApiError> {
        let field_validation = match self.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => FieldValidation::Warn,
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            other => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation parameter unsupported: {other}. Supported values are Ignore, Warn, and Strict"
                )));
            }
        };
        Ok(WriteOptions {
            dry_run: self.dry_run()?,
            field_manager: self.get("fieldManager").unwrap_or("").to_string(),
            field_validation,
        })
    }

    /// Delete options from the query (a body, if any, is merged by the caller).
    pub fn delete_options(&self) -> Result<DeleteOptions, ApiError> {
        Ok(DeleteOptions {
            dry_run: self.dry_run()?,
            grace_period_seconds: self.int("gracePeriodSeconds")?,
            precondition_uid: None,
            precondition_resource_version: None,
            propagation_policy: self.get("propagationPolicy").map(str::to_string),
            orphan_dependents: self.bool("orphanDependents")?,
        })
    }
}

fn validate_list_options(opts: &ListOptions, watch: bool) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let m = opts.resource_version_match.as_str();
    if !matches!(m, "" | "Exact" | "NotOlderThan") {
        errs.push(FieldError::not_supported(
            "resourceVersionMatch",
            m,
            &["Exact", "NotOlderThan", ""],
        ));
    }
    if watch {
        if opts.send_initial_events.is_some() && m != "NotOlderThan" {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        } else if opts.send_initial_events.is_none() && !m.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
    } else {
        if !m.is_empty() && opts.resource_version.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !m.is_empty() && !opts.continue_token.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m == "Exact" && opts.resource_version == "0" {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
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
    if !opts.continue_token.is_empty() && !matches!(opts.resource_version.as_str(), "" | "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(())
}
