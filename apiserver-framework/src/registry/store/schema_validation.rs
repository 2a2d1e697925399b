//! The resource's published schema enforced on create and update, as kube-apiserver enforces a
//! CustomResourceDefinition's (see [`crate::schema::validate`]).

use serde_json::Value;

use super::Store;
use crate::error::{ApiError, FieldError};
use crate::resource::ApiResource;

impl<T: ApiResource> Store<T> {
    /// The field errors of `new` against the schema's constraints and rules; `old` is the
    /// stored object of an update (transition rules and ratcheting read it).
    pub(super) fn validate_schema(
        &self,
        new: &T,
        old: Option<&T>,
    ) -> Result<Vec<FieldError>, ApiError> {
        let validator = match &self.validator {
            Ok(v) if v.is_empty() => return Ok(Vec::new()),
            Ok(v) => v,
            Err(e) => return Err(ApiError::internal(e)),
        };
        let to_json = |obj: &T| serde_json::to_value(obj).map_err(ApiError::internal);
        let new = to_json(new)?;
        let old: Option<Value> = old.map(to_json).transpose()?;
        Ok(validator.validate(&new, old.as_ref()))
    }
}
