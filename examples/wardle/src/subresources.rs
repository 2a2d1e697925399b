//! Flunder's custom subresources, one of each kind:
//!
//! - `flunders/<name>/describe` (GET with options): a summary of the Flunder;
//!   `?verbose=true` adds details, `?maxToppings=N` limits the toppings listed.
//! - `flunders/<name>/topping` (POST, an action): adds a topping (or changes its amount) and
//!   answers the updated Flunder.
//! - `flunders/<name>/console` (connect, WebSocket): echoes what the client sends on the
//!   standard input channel back on the standard output channel (upper-cased with
//!   `?upper=true`).

use apiserver_framework::prelude::*;
use apiserver_framework::registry::rest::connect::{self, ConnectStream};
use std::sync::Arc;

use crate::{Flunder, Topping};

/// The options of `describe`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DescribeOptions {
    /// Add a line of details per topping.
    #[serde(default)]
    pub verbose: bool,
    /// List at most this many toppings (at least 0).
    #[serde(default)]
    pub max_toppings: Option<i64>,
}

/// What `describe` answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlunderDescription {
    /// `FlunderDescription`.
    pub kind: String,
    /// `wardle.example.com/v1alpha1`.
    pub api_version: String,
    /// The Flunder's name.
    pub name: String,
    /// The Flunder's namespace.
    pub namespace: String,
    /// What the Flunder refers to, as `<Type>/<name>`, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refers_to: Option<String>,
    /// The toppings' names (at most `maxToppings`).
    #[serde(default)]
    pub toppings: Vec<String>,
    /// One line per listed topping (verbose only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

/// The `describe` subresource.
pub struct Describe;

#[async_trait]
impl GetterWithOptions for Describe {
    type Options = DescribeOptions;
    type Output = FlunderDescription;

    async fn get(
        &self,
        ctx: &RequestContext,
        name: &str,
        options: DescribeOptions,
    ) -> Result<FlunderDescription, ApiError> {
        if let Some(n) = options.max_toppings
            && n < 0
        {
            return Err(ApiError::bad_request(format!(
                "maxToppings: Invalid value: {n}: must be greater than or equal to 0"
            )));
        }
        let flunder = ctx.registry.resource::<Flunder>()?.get(ctx, name).await?;
        let limit = options.max_toppings.map_or(usize::MAX, |n| n as usize);
        let listed: Vec<&Topping> = flunder.spec.toppings.iter().take(limit).collect();
        let refers_to = flunder.spec.reference.as_ref().map(|r| {
            let kind = flunder
                .spec
                .reference_type
                .map_or("Flunder".to_string(), |t| format!("{t:?}"));
            format!("{kind}/{r}")
        });
        Ok(FlunderDescription {
            kind: "FlunderDescription".into(),
            api_version: "wardle.example.com/v1alpha1".into(),
            name: name.to_string(),
            namespace: ctx.namespace.clone().unwrap_or_default(),
            refers_to,
            toppings: listed.iter().map(|t| t.name.clone()).collect(),
            details: if options.verbose {
                listed
                    .iter()
                    .map(|t| format!("{}: {}", t.name, t.amount.unwrap_or(1)))
                    .collect()
            } else {
                Vec::new()
            },
        })
    }
}

/// The body of the `topping` action.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToppingRequest {
    /// `ToppingRequest`.
    #[serde(default)]
    pub kind: String,
    /// `wardle.example.com/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// The topping to add.
    pub name: String,
    /// How much of it (replaces the amount of a topping already there).
    #[serde(default)]
    pub amount: Option<i32>,
}

/// The `topping` action.
pub struct AddTopping;

#[async_trait]
impl Action for AddTopping {
    type Input = ToppingRequest;
    type Output = Flunder;

    async fn call(
        &self,
        ctx: &RequestContext,
        name: &str,
        input: ToppingRequest,
        dry_run: bool,
    ) -> Result<Flunder, ApiError> {
        if input.name.is_empty() {
            return Err(ApiError::invalid_with(
                "ToppingRequest.wardle.example.com",
                "wardle.example.com",
                "ToppingRequest",
                name,
                &[FieldError::required("name", "")],
            ));
        }
        let topping = Topping {
            name: input.name,
            amount: input.amount,
        };
        let add = |flunder: &mut Flunder| {
            let toppings = &mut flunder.spec.toppings;
            match toppings.iter_mut().find(|t| t.name == topping.name) {
                Some(t) => *t = topping.clone(),
                None => toppings.push(topping.clone()),
            }
            Ok(())
        };
        let opts = WriteOptions {
            dry_run,
            field_manager: "wardle-topping".into(),
            ..Default::default()
        };
        let flunders = ctx.registry.resource::<Flunder>()?;
        flunders.update(ctx, name, add, &opts).await
    }
}

/// The options of `console`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleOptions {
    /// Echo in upper case.
    #[serde(default)]
    pub upper: bool,
}

/// The `console` connect subresource.
pub struct Console;

#[async_trait]
impl Connecter for Console {
    type Options = ConsoleOptions;

    async fn connect(
        &self,
        ctx: &RequestContext,
        name: &str,
        options: ConsoleOptions,
    ) -> Result<Session, ApiError> {
        // The Flunder must exist: a missing one answers 404 before anything is upgraded.
        ctx.registry.resource::<Flunder>()?.get(ctx, name).await?;
        Ok(Box::new(move |stream| {
            Box::pin(echo(stream, options.upper))
        }))
    }
}

/// Echoes standard input to standard output until the client closes it or leaves.
async fn echo(mut stream: ConnectStream, upper: bool) {
    while let Some(frame) = stream.recv().await {
        match frame.channel {
            connect::STDIN => {
                let data = if upper {
                    frame.data.to_ascii_uppercase().into()
                } else {
                    frame.data
                };
                if stream.send(connect::STDOUT, data).await.is_err() {
                    return;
                }
            }
            connect::CLOSE if frame.data.first() == Some(&connect::STDIN) => break,
            _ => {}
        }
    }
    stream.finish(None).await;
}

/// `describe`: GET with [`DescribeOptions`], answering a [`FlunderDescription`].
pub fn describe() -> Arc<dyn CustomSubresource> {
    Subresource::getter(
        SubresourceNames::new("describe", "FlunderDescription")
            .description("Read a summary of the specified Flunder."),
        Describe,
    )
}

/// `topping`: POST a [`ToppingRequest`], answering the updated Flunder.
pub fn topping() -> Arc<dyn CustomSubresource> {
    Subresource::action(
        SubresourceNames::new("topping", "Flunder")
            .body_kind("ToppingRequest")
            .description("Add a topping to the specified Flunder."),
        AddTopping,
    )
}

/// `console`: a WebSocket echoing standard input (options: [`ConsoleOptions`]).
pub fn console() -> Arc<dyn CustomSubresource> {
    Subresource::connecter(
        SubresourceNames::new("console", "ConsoleOptions")
            .description("Connect to the console of the specified Flunder."),
        Console,
    )
}
