//! [`AdmissionChecks`]: the server's authorizer answering the checks of admission's CEL
//! expressions (`authorizer.…check(verb)`), as upstream's authorizer library asks it.

use std::sync::Arc;

use crate::authz::attributes::{field_requirements, label_requirements};
use crate::authz::{
    Attributes, Authorizer, Decision, NonResourceAttributes, Request, ResourceAttributes,
};
use crate::cel::authorizer::{Authorize, Check, Target, Verdict, user_of};
use crate::user::UserInfo;

/// The server's authorizer, deciding admission's CEL checks.
pub(crate) struct AdmissionChecks(pub Arc<dyn Authorizer>);

#[async_trait::async_trait]
impl Authorize for AdmissionChecks {
    async fn decide(&self, user: &UserInfo, check: &Check) -> Verdict {
        let request = match &check.target {
            Target::Path(path) => Request::NonResource(NonResourceAttributes {
                path: path.clone(),
                verb: check.verb.clone(),
            }),
            // Upstream asks for every version (`apiVersion` `*`).
            Target::Resource(target) => Request::Resource(ResourceAttributes {
                verb: check.verb.clone(),
                group: target.group.clone(),
                version: "*".into(),
                resource: target.resource.clone(),
                subresource: target.subresource.clone(),
                namespace: target.namespace.clone(),
                name: target.name.clone(),
                field_selector: field_requirements(&target.field_selector),
                label_selector: label_requirements(&target.label_selector),
            }),
        };
        let attrs = Attributes {
            user: user_of(user, check),
            request,
        };
        match self.0.authorize(&attrs).await {
            Ok(Decision::Allow) => Verdict {
                allowed: true,
                ..Verdict::default()
            },
            Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => Verdict {
                reason,
                ..Verdict::default()
            },
            Err(e) => Verdict {
                error: Some(e.0),
                ..Verdict::default()
            },
        }
    }
}
