//! Kubernetes' CEL on the `cel` crate and `kube-cel`'s libraries, as the schema's rules and
//! admission (webhook match conditions, admission policies) use it: expressions compiled with
//! what the interpreter cannot evaluate refused ([`compile`]), JSON values as Kubernetes' CEL
//! sees them ([`json`]), upstream's per-call cost budget ([`cost`]), and the authorizer library
//! ([`authorizer`]).

pub(crate) mod authorizer;
pub(crate) mod cost;
pub(crate) mod json;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};
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

/// The direct sub-expressions of `expr` (a map's or an object's entries: their keys and
/// values, a field's value).
pub(crate) fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    fn entries(entries: &[IdedEntryExpr]) -> Vec<&IdedExpr> {
        entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect()
    }
    match &expr.expr {
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => Vec::new(),
        Expr::Select(select) => vec![&select.operand],
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => entries(&map.entries),
        Expr::Struct(object) => entries(&object.entries),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
    }
}

/// Whether `expr` names the variable `name` (as an identifier, or the first step of a
/// selection such as `authorizer.requestResource`).
pub(crate) fn names(expr: &IdedExpr, name: &str) -> bool {
    matches!(&expr.expr, Expr::Ident(ident) if ident == name)
        || children(expr).into_iter().any(|c| names(c, name))
}

/// The first construct of `expr` the `cel` crate's interpreter cannot evaluate (it panics on
/// them): object construction (`Type{field: value}`), used by mutating policies' apply
/// configurations and JSON patches.
pub(crate) fn unsupported(expr: &IdedExpr) -> Option<&'static str> {
    let construction = match &expr.expr {
        Expr::Unspecified => return Some("an unspecified expression"),
        Expr::Struct(_) => true,
        Expr::Map(map) => map
            .entries
            .iter()
            .any(|entry| matches!(entry.expr, EntryExpr::StructField(_))),
        _ => false,
    };
    if construction {
        return Some("object construction (Type{field: value})");
    }
    children(expr).into_iter().find_map(unsupported)
}
