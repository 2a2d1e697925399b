//! [`Group`]: the resources of one API group, as a server's builder receives them, and the
//! [`RegistrationError`]s a group reports instead of serving what it cannot.

use std::sync::Arc;

use crate::registry::rest::subresource::CustomSubresource;
use crate::registry::rest::with_subresources::WithSubresources;
use crate::registry::rest::{ProtobufDecoder, RestStorage};
use crate::registry::store::Store;
use crate::registry::store::strategy::{DefaultStrategy, Strategy};
use crate::registry::versions::{Kind, StorageVersions};
use crate::resource::ApiResource;
use crate::storage::Storage;

type Factory =
    Box<dyn FnOnce(&Arc<dyn Storage>, &StorageVersions) -> Vec<Arc<dyn RestStorage>> + Send>;

/// What cannot be registered: reported by [`Group::check`] (and so by `App`'s commands and
/// [`GenericApiServerBuilder::try_build`](crate::server::GenericApiServerBuilder::try_build))
/// rather than served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// A resource registered in a group other than the one its type names.
    #[error(
        "{kind} ({api_version}) is registered in group {group:?}, but its type names group {expected:?}"
    )]
    WrongGroup {
        /// The resource's kind.
        kind: String,
        /// The resource's `<group>/<version>`.
        api_version: String,
        /// The group it was registered in.
        group: String,
        /// The group its type names.
        expected: String,
    },
    /// The same resource registered twice in one version.
    #[error("{resource} is registered twice in version {version}")]
    DuplicateResource {
        /// `<plural>.<group>`.
        resource: String,
        /// The version.
        version: String,
    },
    /// A custom subresource name that is empty, holds a `/`, or is `status` or `scale`.
    #[error("invalid custom subresource name {name:?} of {resource}")]
    InvalidSubresourceName {
        /// `<plural>.<group>`.
        resource: String,
        /// The name.
        name: String,
    },
    /// The same custom subresource registered twice.
    #[error("subresource {plural}/{name} of group {group:?} ({version}) is registered twice")]
    DuplicateSubresource {
        /// The group.
        group: String,
        /// The version.
        version: String,
        /// The resource's plural.
        plural: String,
        /// The subresource's name.
        name: String,
    },
    /// A resource whose schema declares an `x-kubernetes-validations` rule that cannot be used:
    /// it does not compile, gives an unknown reason, or its estimated cost is over the limit.
    #[error("{resource} {version}: {error}")]
    InvalidValidationRule {
        /// `<plural>.<group>`.
        resource: String,
        /// The version.
        version: String,
        /// What is wrong, naming the rule and where it is declared.
        error: String,
    },
    /// A custom subresource of a resource its group does not serve.
    #[error(
        "subresource {plural}/{name} is registered for {plural} in {version}, which group {group:?} does not serve"
    )]
    UnservedSubresource {
        /// The group.
        group: String,
        /// The version.
        version: String,
        /// The resource's plural.
        plural: String,
        /// The subresource's name.
        name: String,
    },
}

/// The resources of one API group, for what needs explicit group options; most servers
/// register resources on the `App` directly (`App::resource::<T>()`), which groups them by the
/// group their derive names.
///
/// ```text
/// Group::new("wardle.example.com")
///     .resource::<Flunder>()
///     .resource_with::<Fischer>(FischerStrategy)
///     .subresource::<Flunder>(Subresource::getter(names, Describe))
/// ```
///
/// A resource of another group is not served: [`Group::check`] reports it, naming both
/// groups, and the server does not start.
pub struct Group {
    name: String,
    versions: Vec<String>,
    factories: Vec<Factory>,
    /// Custom subresources by `(version, plural)` of their resource.
    subresources: Vec<(String, String, Arc<dyn CustomSubresource>)>,
    storage_versions: StorageVersions,
    /// The declared versions of each multi-version kind, by `<plural>.<group>`.
    kinds: StorageVersions,
    /// The `(version, plural)` of every resource registered.
    served: Vec<(String, String)>,
    /// What could not be registered.
    errors: Vec<RegistrationError>,
}

impl Group {
    /// An empty group named `name` (e.g. `wardle.example.com`).
    pub fn new(name: impl Into<String>) -> Self {
        Group {
            name: name.into(),
            versions: Vec::new(),
            factories: Vec::new(),
            subresources: Vec::new(),
            storage_versions: StorageVersions::new(),
            kinds: StorageVersions::new(),
            served: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Whether everything registered can be served: the first [`RegistrationError`] if not.
    pub fn check(&self) -> Result<(), RegistrationError> {
        if let Some(e) = self.errors.first() {
            return Err(e.clone());
        }
        match self
            .subresources
            .iter()
            .find(|(v, p, _)| !self.served.iter().any(|(sv, sp)| sv == v && sp == p))
        {
            Some((version, plural, s)) => Err(RegistrationError::UnservedSubresource {
                group: self.name.clone(),
                version: version.clone(),
                plural: plural.clone(),
                name: s.info().name.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Adds what `other`, a group of the same name, registers to this group.
    pub(crate) fn merge(mut self, other: Group) -> Self {
        debug_assert_eq!(self.name, other.name);
        for v in &other.versions {
            self.add_version(v);
        }
        for (version, plural) in other.served {
            self.add_served(&version, &plural);
        }
        self.factories.extend(other.factories);
        for (version, plural, sub) in other.subresources {
            self = self.subresource_of(&version, &plural, sub);
        }
        self.storage_versions.extend(other.storage_versions);
        self.kinds.extend(other.kinds);
        self.errors.extend(other.errors);
        self
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The versions of the group's resources, in registration order, without repeats.
    pub fn versions(&self) -> &[String] {
        &self.versions
    }

    /// Serves `T` with the generic store and the default strategy.
    pub fn resource<T: ApiResource>(self) -> Self {
        self.resource_with::<T>(DefaultStrategy)
    }

    /// Serves `T` with the generic store driven by `strategy`.
    pub fn resource_with<T: ApiResource>(mut self, strategy: impl Strategy<T>) -> Self {
        let strategy: Arc<dyn Strategy<T>> = Arc::new(strategy);
        let info = T::resource_info();
        if !self.accepts(&info) {
            return self;
        }
        self.check_rules(&info);
        self.factories.push(Box::new(
            move |storage: &Arc<dyn Storage>, _: &StorageVersions| {
                vec![Arc::new(Store::<T>::new(storage.clone(), strategy)) as Arc<dyn RestStorage>]
            },
        ));
        self
    }

    /// Records an [`RegistrationError::InvalidValidationRule`] when a rule of `info`'s schema
    /// cannot be used.
    fn check_rules(&mut self, info: &crate::resource::ResourceInfo) {
        if let Err(e) = crate::schema::SchemaValidator::new(&info.schema) {
            self.errors.push(RegistrationError::InvalidValidationRule {
                resource: info.group_resource(),
                version: info.version.clone(),
                error: e.to_string(),
            });
        }
    }

    /// Serves the built-in kind `T` with the generic store and the default strategy, accepting
    /// bodies in Kubernetes' protobuf encoding decoded by `decoder` (the development host's
    /// core resources, which kubectl creates with typed clients).
    pub(crate) fn built_in<T: ApiResource>(mut self, decoder: ProtobufDecoder) -> Self {
        let info = T::resource_info();
        if !self.accepts(&info) {
            return self;
        }
        self.factories.push(Box::new(
            move |storage: &Arc<dyn Storage>, _: &StorageVersions| {
                let store = Store::<T>::new(storage.clone(), Arc::new(DefaultStrategy))
                    .with_protobuf_decoder(decoder);
                vec![Arc::new(store) as Arc<dyn RestStorage>]
            },
        ));
        self
    }

    /// Serves `T` computed by `provider` on each request (see
    /// [`crate::registry::rest::computed`]): read-only, nothing stored.
    pub fn computed<T: ApiResource>(
        self,
        provider: impl crate::registry::rest::computed::ResourceProvider<T>,
    ) -> Self {
        self.storage(Arc::new(
            crate::registry::rest::computed::Computed::<T, _>::new(provider),
        ))
    }

    /// Serves every version of a multi-version kind (see [`Kind`]).
    pub fn kind<H: Send + Sync + 'static>(mut self, kind: Kind<H>) -> Self {
        if kind.group() != self.name {
            self.errors.push(RegistrationError::WrongGroup {
                kind: kind.kind().to_string(),
                api_version: format!("{}/{}", kind.group(), kind.served_versions().join(",")),
                group: self.name.clone(),
                expected: kind.group().to_string(),
            });
            return self;
        }
        for info in kind.declared_infos() {
            self.check_rules(info);
        }
        for v in kind.served_versions() {
            self.add_version(&v);
            self.add_served(&v, kind.plural());
        }
        let resource = format!("{}.{}", kind.plural(), kind.group());
        self.kinds
            .insert(resource.clone(), kind.declared_versions().join(","));
        self.factories.push(Box::new(
            move |storage: &Arc<dyn Storage>, chosen: &StorageVersions| {
                kind.build(storage, chosen.get(&resource).map(String::as_str))
            },
        ));
        self
    }

    /// Stores `resource` (`<plural>.<group>`) of a multi-version kind in `version`, whatever
    /// its [`Kind`] declares (the `--storage-version` flag).
    /// A resource that is not a multi-version kind of this group, or a version the kind does
    /// not declare, is an error naming them.
    pub fn set_storage_version(&mut self, resource: &str, version: &str) -> Result<(), String> {
        let Some(declared) = self.kinds.get(resource) else {
            return Err(format!(
                "{resource} is not a resource of {} served in several versions",
                self.name
            ));
        };
        if !declared.split(',').any(|v| v == version) {
            return Err(format!(
                "{resource} has no version {version:?} (it has {declared})"
            ));
        }
        self.storage_versions
            .insert(resource.to_string(), version.to_string());
        Ok(())
    }

    /// Serves a hand-written storage (for computed resources that need more than
    /// [`Group::computed`] gives).
    pub fn storage(mut self, rest: Arc<dyn RestStorage>) -> Self {
        if !self.accepts(rest.info()) {
            return self;
        }
        self.factories.push(Box::new(move |_, _| vec![rest]));
        self
    }

    /// Serves a custom subresource (see [`crate::registry::rest::subresource`]) of `T`'s resource.
    /// Its answers are documented in `T`'s group and version.
    pub fn subresource<T: ApiResource>(self, subresource: Arc<dyn CustomSubresource>) -> Self {
        let info = T::resource_info();
        self.subresource_of(&info.version, &info.plural, subresource)
    }

    /// Serves a custom subresource of the resource `plural` in `version` of this group (for
    /// hand-written storages).
    pub fn subresource_of(
        mut self,
        version: &str,
        plural: &str,
        subresource: Arc<dyn CustomSubresource>,
    ) -> Self {
        let name = &subresource.info().name;
        if name.is_empty() || name.contains('/') || matches!(name.as_str(), "status" | "scale") {
            self.errors.push(RegistrationError::InvalidSubresourceName {
                resource: format!("{plural}.{}", self.name),
                name: name.clone(),
            });
            return self;
        }
        if self
            .subresources
            .iter()
            .any(|(v, p, s)| v == version && p == plural && s.info().name == *name)
        {
            self.errors.push(RegistrationError::DuplicateSubresource {
                group: self.name.clone(),
                version: version.to_string(),
                plural: plural.to_string(),
                name: name.clone(),
            });
            return self;
        }
        self.subresources
            .push((version.to_string(), plural.to_string(), subresource));
        self
    }

    fn add_version(&mut self, version: &str) {
        if !self.versions.iter().any(|v| v == version) {
            self.versions.push(version.to_string());
        }
    }

    fn add_served(&mut self, version: &str, plural: &str) {
        if self.served.iter().any(|(v, p)| v == version && p == plural) {
            self.errors.push(RegistrationError::DuplicateResource {
                resource: format!("{plural}.{}", self.name),
                version: version.to_string(),
            });
        } else {
            self.served.push((version.to_string(), plural.to_string()));
        }
    }

    /// Whether a resource described by `info` belongs here; records it (or the error).
    fn accepts(&mut self, info: &crate::resource::ResourceInfo) -> bool {
        if info.group != self.name {
            self.errors.push(RegistrationError::WrongGroup {
                kind: info.kind.clone(),
                api_version: info.api_version(),
                group: self.name.clone(),
                expected: info.group.clone(),
            });
            return false;
        }
        self.add_version(&info.version);
        self.add_served(&info.version, &info.plural);
        true
    }

    /// Builds the storages of the group's resources on `storage`.
    ///
    /// # Panics
    /// When [`Group::check`] reports an error (callers check first).
    pub(crate) fn build(self, storage: &Arc<dyn Storage>) -> Vec<Arc<dyn RestStorage>> {
        let chosen = self.storage_versions;
        let mut subresources = self.subresources;
        let built: Vec<Arc<dyn RestStorage>> = self
            .factories
            .into_iter()
            .flat_map(|f| f(storage, &chosen))
            .map(|rest| {
                let info = rest.info().clone();
                let (mine, rest_of) = std::mem::take(&mut subresources)
                    .into_iter()
                    .partition(|(v, p, _)| *v == info.version && *p == info.plural);
                subresources = rest_of;
                let mine: Vec<Arc<dyn CustomSubresource>> =
                    mine.into_iter().map(|(_, _, s)| s).collect();
                if mine.is_empty() {
                    rest
                } else {
                    Arc::new(WithSubresources::new(rest, mine)) as Arc<dyn RestStorage>
                }
            })
            .collect();
        if let Some((v, p, s)) = subresources.first() {
            panic!(
                "subresource {p}/{} registered for a resource {v}/{p} that group {:?} does not serve",
                s.info().name,
                self.name
            );
        }
        built
    }
}
