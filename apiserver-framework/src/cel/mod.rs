//! Kubernetes' CEL on the `cel` crate and `kube-cel`'s libraries, as the schema's rules and
//! admission (webhook match conditions, admission policies) use it: expressions compiled with
//! what the interpreter cannot evaluate refused ([`compile`]), JSON values as Kubernetes' CEL
//! sees them ([`json`]), upstream's per-call cost budget ([`cost`]), and the authorizer library
//! ([`authorizer`]).

pub(crate) mod authorizer;
pub(crate) mod cost;
pub(crate) mod json;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::common::ast::{EntryExpr, Expr};
use kube_cel::cel::extractors::This;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, IdedExpr, Program, Value};

/// A context with CEL's standard functions and Kubernetes' libraries (`kube-cel`), where
/// `string()` also converts a bool (`'true'`, `'false'`) as CEL's specification and upstream do
/// (the `cel` crate's conversion refuses bools).
pub(crate) fn context<'a>() -> Context<'a> {
    let mut context = Context::default().with_all();
    context.add_function("string", string);
    context
}

/// CEL's `string()` conversion, bools included.
fn string(ftx: &FunctionContext, This(this): This<Value>) -> Result<Value, ExecutionError> {
    match this {
        Value::Bool(b) => Ok(Value::String(std::sync::Arc::new(b.to_string()))),
        other => kube_cel::cel::functions::string(ftx, This(other)),
    }
}

/// `expression` compiled, or why not (upstream's `compilation failed: ...`); an expression with
/// a construct the interpreter cannot evaluate is refused here rather than at its first use.
pub(crate) fn compile(expression: &str) -> Result<Program, String> {
    let program = Program::compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
    match unsupported(program.expression()) {
        Some(what) => Err(format!("compilation failed: {what} is not supported")),
        None => Ok(program),
    }
}

/// Whether `expr` names the variable `name` (as an identifier, or the first step of a
/// selection such as `authorizer.requestResource`).
pub(crate) fn names(expr: &IdedExpr, name: &str) -> bool {
    match &expr.expr {
        Expr::Ident(ident) => ident == name,
        Expr::Unspecified | Expr::Literal(_) => false,
        Expr::Select(select) => names(&select.operand, name),
        Expr::Call(call) => {
            call.target.as_deref().is_some_and(|t| names(t, name))
                || call.args.iter().any(|a| names(a, name))
        }
        Expr::List(list) => list.elements.iter().any(|e| names(e, name)),
        Expr::Map(map) => map.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => names(&e.key, name) || names(&e.value, name),
            EntryExpr::StructField(f) => names(&f.value, name),
        }),
        Expr::Struct(object) => object.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => names(&e.key, name) || names(&e.value, name),
            EntryExpr::StructField(f) => names(&f.value, name),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(|e| names(e, name)),
    }
}

/// The first construct of `expr` the `cel` crate's interpreter cannot evaluate (it panics on
/// them): object construction (`Type{field: value}`), used by mutating policies' apply
/// configurations and JSON patches.
pub(crate) fn unsupported(expr: &IdedExpr) -> Option<&'static str> {
    match &expr.expr {
        Expr::Unspecified => Some("an unspecified expression"),
        Expr::Struct(_) => Some("object construction (Type{field: value})"),
        Expr::Ident(_) | Expr::Literal(_) => None,
        Expr::Select(select) => unsupported(&select.operand),
        Expr::Call(call) => call
            .target
            .as_deref()
            .and_then(unsupported)
            .or_else(|| call.args.iter().find_map(unsupported)),
        Expr::List(list) => list.elements.iter().find_map(unsupported),
        Expr::Map(map) => map.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => unsupported(&e.key).or_else(|| unsupported(&e.value)),
            EntryExpr::StructField(_) => Some("object construction (Type{field: value})"),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(unsupported),
    }
}
