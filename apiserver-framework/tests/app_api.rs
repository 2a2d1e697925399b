//! The API a server's own code uses: resources registered on the `App` in the group their derive
//! names, registration errors instead of panics, typed admission (`attrs.object::<T>()`,
//! `resource.is::<T>()`) and typed reads and updates through `registry.resource::<T>()`, served
//! over HTTPS by the test kit and driven with kube-rs.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use apiserver_framework::admission::AdmissionChain;
use apiserver_framework::prelude::*;
use apiserver_framework::testing::TestServer;
use apiserver_framework::user::UserInfo;
use kube::api::{Api, PostParams};

/// A namespaced gadget of a size.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "gadgets.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced
)]
pub struct GadgetSpec {
    /// How big it is.
    pub size: u32,
}

/// A gizmo, in the gadgets group's second version.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "gadgets.example.com",
    version = "v1beta1",
    kind = "Gizmo",
    namespaced
)]
pub struct GizmoSpec {
    /// A note.
    pub note: String,
}

/// A sprocket, in another group.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "parts.example.com",
    version = "v1",
    kind = "Sprocket",
    namespaced
)]
pub struct SprocketSpec {
    /// How many teeth.
    pub teeth: u32,
}

/// `Part` in two versions: centimetres in v1alpha1, millimetres in v1 (the hub, stored).
pub mod v1alpha1 {
    use super::*;

    /// A part measured in centimetres.
    #[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[resource(
        group = "parts.example.com",
        version = "v1alpha1",
        kind = "Part",
        namespaced
    )]
    #[serde(rename_all = "camelCase")]
    pub struct PartSpec {
        /// Length in centimetres.
        pub length_cm: u32,
    }
}

/// `Part` in v1.
pub mod v1 {
    use super::*;

    /// A part measured in millimetres.
    #[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[resource(group = "parts.example.com", version = "v1", kind = "Part", namespaced)]
    #[serde(rename_all = "camelCase")]
    pub struct PartSpec {
        /// Length in millimetres.
        pub length_mm: u32,
    }

    impl From<v1alpha1::Part> for Part {
        fn from(old: v1alpha1::Part) -> Self {
            Part {
                metadata: old.metadata,
                spec: PartSpec {
                    length_mm: old.spec.length_cm * 10,
                },
            }
        }
    }

    impl From<Part> for v1alpha1::Part {
        fn from(new: Part) -> Self {
            v1alpha1::Part {
                metadata: new.metadata,
                spec: v1alpha1::PartSpec {
                    length_cm: new.spec.length_mm / 10,
                },
            }
        }
    }
}

fn part_kind() -> Kind<v1::Part> {
    Kind::new()
        .version::<v1alpha1::Part>()
        .version::<v1::Part>()
        .storage_version("v1")
}

/// What the plugins saw, one line per call.
type Seen = Arc<Mutex<Vec<String>>>;

/// Gadgets are at most 10 and never shrink; records how it read the objects.
struct GadgetLimit {
    seen: Seen,
}

/// Whether admission handed on the store's object (borrowed) or decoded one (owned).
#[allow(clippy::ptr_arg)] // it reads which variant the Cow is
fn how(obj: &Cow<'_, Gadget>) -> &'static str {
    match obj {
        Cow::Borrowed(_) => "typed",
        Cow::Owned(_) => "decoded",
    }
}

#[async_trait]
impl AdmissionPlugin for GadgetLimit {
    fn name(&self) -> &str {
        "GadgetLimit"
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation != Operation::Delete && resource.is::<Gadget>()
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let gadget = attrs.object::<Gadget>()?.expect("a write has an object");
        let line = format!("mutate {} {}", gadget.spec.size, how(&gadget));
        self.seen.lock().unwrap().push(line);
        Ok(())
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        // A type of another resource is an error naming both.
        let wrong = attrs.object::<Sprocket>().unwrap_err();
        assert_eq!(wrong.code, 500);
        assert!(
            wrong.message.contains("Sprocket.parts.example.com/v1")
                && wrong.message.contains("gadgets.gadgets.example.com"),
            "{}",
            wrong.message
        );
        let gadget = attrs.object::<Gadget>()?.expect("a write has an object");
        let old = attrs.old_object::<Gadget>()?;
        let line = match &old {
            Some(old) => format!(
                "validate {} {} old {} {}",
                gadget.spec.size,
                how(&gadget),
                old.spec.size,
                how(old)
            ),
            None => format!("validate {} {}", gadget.spec.size, how(&gadget)),
        };
        self.seen.lock().unwrap().push(line);
        if gadget.spec.size > 10 {
            return Err(attrs.forbidden("gadgets are at most 10"));
        }
        if let Some(old) = old
            && gadget.spec.size < old.spec.size
        {
            return Err(attrs.forbidden("gadgets do not shrink"));
        }
        Ok(())
    }
}

/// Parts are at most 100 cm, read in v1alpha1 while they are stored in v1.
struct PartLimit {
    seen: Seen,
}

#[async_trait]
impl AdmissionPlugin for PartLimit {
    fn name(&self) -> &str {
        "PartLimit"
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create && resource.is::<v1alpha1::Part>()
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let part = attrs
            .object::<v1alpha1::Part>()?
            .expect("a create has an object");
        let line = format!("part {} cm", part.spec.length_cm);
        self.seen.lock().unwrap().push(line);
        if part.spec.length_cm > 100 {
            return Err(attrs.forbidden("parts are at most 100 cm"));
        }
        Ok(())
    }
}

/// A `describe` subresource of gadgets, answering the gadget.
struct Describe;

/// No options.
#[derive(Deserialize, JsonSchema)]
struct NoOptions {}

#[async_trait]
impl GetterWithOptions for Describe {
    type Options = NoOptions;
    type Output = Gadget;

    async fn get(
        &self,
        ctx: &RequestContext,
        name: &str,
        _: NoOptions,
    ) -> Result<Gadget, ApiError> {
        ctx.registry.resource::<Gadget>()?.get(ctx, name).await
    }
}

fn app(seen: &Seen) -> App {
    App::new("parts")
        .resource::<Gadget>()
        .resource::<Sprocket>()
        .resource::<Gizmo>()
        .kind(part_kind())
        .admission(GadgetLimit { seen: seen.clone() })
        .admission(PartLimit { seen: seen.clone() })
}

fn gadget(name: &str, size: u32) -> Gadget {
    Gadget::new(name, GadgetSpec { size })
}

fn gv(app: &App) -> Vec<String> {
    app.group_versions()
        .iter()
        .map(|gv| format!("{}/{}", gv.group, gv.version))
        .collect()
}

#[test]
fn resources_are_grouped_by_their_derives_group() {
    let seen = Seen::default();
    // Gadget and Gizmo share a group though Sprocket was registered between them; Part's
    // versions join Sprocket's group.
    assert_eq!(
        gv(&app(&seen)),
        [
            "gadgets.example.com/v1",
            "gadgets.example.com/v1beta1",
            "parts.example.com/v1",
            "parts.example.com/v1alpha1",
        ]
    );
    let extension = app(&seen).extension();
    assert_eq!(
        extension.groups,
        [
            (
                "gadgets.example.com".to_string(),
                vec!["v1".to_string(), "v1beta1".to_string()]
            ),
            (
                "parts.example.com".to_string(),
                vec!["v1".to_string(), "v1alpha1".to_string()]
            ),
        ]
    );
    // A Group given explicitly joins the group of the same name.
    let merged = App::new("x")
        .resource::<Gadget>()
        .group(Group::new("gadgets.example.com").resource::<Gizmo>());
    assert_eq!(
        gv(&merged),
        ["gadgets.example.com/v1", "gadgets.example.com/v1beta1"]
    );
    merged.check().unwrap();
    assert!(App::new("x").resource::<Gadget>().build().is_ok());
}

#[tokio::test]
async fn a_resource_in_another_group_is_an_error_naming_both() {
    let wrong = || App::new("x").group(Group::new("other.example.com").resource::<Gadget>());
    let message = wrong().check().unwrap_err().to_string();
    assert_eq!(
        message,
        r#"Gadget (gadgets.example.com/v1) is registered in group "other.example.com", but its type names group "gadgets.example.com""#
    );
    assert_eq!(wrong().build().err().unwrap().to_string(), message);
    // Starting it fails with the same error, before anything listens.
    let started = TestServer::start(wrong()).await;
    assert!(started.err().unwrap().to_string().contains(&message));
    // The resource is not served: the group has no version.
    assert!(gv(&wrong()).is_empty());

    // A multi-version kind in another group, the same resource twice.
    let kind = App::new("x").group(Group::new("gadgets.example.com").kind(part_kind()));
    let message = kind.check().unwrap_err().to_string();
    assert!(
        message.contains(r#"group "gadgets.example.com""#)
            && message.contains(r#"group "parts.example.com""#),
        "{message}"
    );
    // A subresource of a resource the app does not serve.
    let orphan = App::new("x")
        .resource::<Gizmo>()
        .subresource::<Gadget>(Subresource::getter(
            SubresourceNames::new("describe", "Gadget"),
            Describe,
        ));
    assert_eq!(
        orphan.check().unwrap_err().to_string(),
        r#"subresource gadgets/describe is registered for gadgets in v1, which group "gadgets.example.com" does not serve"#
    );
    assert!(TestServer::start(orphan).await.is_err());
    let twice = App::new("x").resource::<Gadget>().resource::<Gadget>();
    assert_eq!(
        twice.check().unwrap_err().to_string(),
        "gadgets.gadgets.example.com is registered twice in version v1"
    );
}

#[tokio::test]
async fn admission_reads_typed_objects_and_refuses_with_a_status() {
    let seen = Seen::default();
    let server = TestServer::start(app(&seen))
        .await
        .expect("the server starts");
    let gadgets: Api<Gadget> = Api::namespaced(server.client(), "default");
    let take = || std::mem::take(&mut *seen.lock().unwrap());

    let created = gadgets
        .create(&PostParams::default(), &gadget("small", 3))
        .await
        .expect("a small gadget is admitted");
    // The mutating plugin decodes the JSON (earlier plugins may have changed it); the
    // validating one gets the store's typed object.
    assert_eq!(take(), ["mutate 3 decoded", "validate 3 typed"]);

    let kube::Error::Api(refused) = gadgets
        .create(&PostParams::default(), &gadget("big", 50))
        .await
        .unwrap_err()
    else {
        panic!("not a Status")
    };
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        r#"gadgets.gadgets.example.com "big" is forbidden: gadgets are at most 10"#
    );
    assert_eq!(take(), ["mutate 50 decoded", "validate 50 typed"]);

    // An update sees the stored object typed as well.
    let mut shrunk = created.clone();
    shrunk.spec.size = 2;
    let kube::Error::Api(refused) = gadgets
        .replace("small", &PostParams::default(), &shrunk)
        .await
        .unwrap_err()
    else {
        panic!("not a Status")
    };
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        r#"gadgets.gadgets.example.com "small" is forbidden: gadgets do not shrink"#
    );
    assert_eq!(take(), ["mutate 2 decoded", "validate 2 typed old 3 typed"]);

    // Matching by type: a Sprocket and a Gizmo reach neither plugin.
    let sprockets: Api<Sprocket> = Api::namespaced(server.client(), "default");
    sprockets
        .create(
            &PostParams::default(),
            &Sprocket::new("s", SprocketSpec { teeth: 99 }),
        )
        .await
        .expect("sprockets are not limited");
    let gizmos: Api<Gizmo> = Api::namespaced(server.client(), "default");
    gizmos
        .create(
            &PostParams::default(),
            &Gizmo::new("g", GizmoSpec { note: "x".into() }),
        )
        .await
        .expect("gizmos are not limited");
    assert!(take().is_empty());

    // A plugin reading another version of a multi-version kind gets the object converted:
    // parts are stored in v1 (millimetres) and read in v1alpha1 (centimetres).
    let parts: Api<v1::Part> = Api::namespaced(server.client(), "default");
    parts
        .create(
            &PostParams::default(),
            &v1::Part::new("short", v1::PartSpec { length_mm: 500 }),
        )
        .await
        .expect("a 50 cm part is admitted");
    let kube::Error::Api(refused) = parts
        .create(
            &PostParams::default(),
            &v1::Part::new("long", v1::PartSpec { length_mm: 2000 }),
        )
        .await
        .unwrap_err()
    else {
        panic!("not a Status")
    };
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        r#"parts.parts.example.com "long" is forbidden: parts are at most 100 cm"#
    );
    assert_eq!(take(), ["part 50 cm", "part 200 cm"]);
}

#[tokio::test]
async fn the_registry_reads_and_updates_objects_typed() {
    let seen = Seen::default();
    let server = TestServer::start(app(&seen))
        .await
        .expect("the server starts");
    let gadgets: Api<Gadget> = Api::namespaced(server.client(), "default");
    gadgets
        .create(&PostParams::default(), &gadget("g", 4))
        .await
        .unwrap();
    let ctx = RequestContext {
        namespace: Some("default".into()),
        user: UserInfo::new("tester", &["system:authenticated"]),
        admission: Arc::new(AdmissionChain::new(vec![Arc::new(GadgetLimit {
            seen: seen.clone(),
        })])),
        registry: server.registry().clone(),
        request_resource: None,
        notes: Default::default(),
    };
    let typed = server.registry().resource::<Gadget>().unwrap();
    assert_eq!(typed.get(&ctx, "g").await.unwrap().spec.size, 4);
    let missing = typed.get(&ctx, "nope").await.unwrap_err();
    assert_eq!(missing.code, 404);

    let opts = WriteOptions {
        field_manager: "grower".into(),
        ..Default::default()
    };
    let grown = typed
        .update(
            &ctx,
            "g",
            |g: &mut Gadget| {
                g.spec.size += 1;
                Ok(())
            },
            &opts,
        )
        .await
        .unwrap();
    assert_eq!(grown.spec.size, 5);
    assert_eq!(gadgets.get("g").await.unwrap().spec.size, 5);
    // The update went through admission like any other.
    let seen_lines = std::mem::take(&mut *seen.lock().unwrap());
    assert!(
        seen_lines.contains(&"validate 5 typed old 4 typed".to_string()),
        "{seen_lines:?}"
    );
    let refused = typed
        .update(
            &ctx,
            "g",
            |g: &mut Gadget| {
                g.spec.size = 1;
                Ok(())
            },
            &opts,
        )
        .await
        .unwrap_err();
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));

    // A version the server does not serve is an error naming it.
    let app_without_gizmos = App::new("y").resource::<Gadget>().build().unwrap();
    let e = app_without_gizmos
        .registry()
        .resource::<Gizmo>()
        .err()
        .unwrap();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            500,
            "Internal error occurred: gizmos.gadgets.example.com is not served in v1beta1"
        )
    );
}
