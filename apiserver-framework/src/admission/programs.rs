//! CEL expressions compiled once, by their text: the host's webhook configurations and
//! admission policies are read again for each request, their expressions are not compiled
//! again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::cel::common::ast::{EntryExpr, Expr};
use kube_cel::cel::{IdedExpr, Program};

use crate::admission::cost::metered;

/// The most compiled expressions kept; past it the cache starts over (the expressions come
/// from the host's webhook configurations and policies, so the set is small and changes
/// rarely).
const MAX_PROGRAMS: usize = 1024;

/// Expressions compiled once, by their text: the host's configurations are read again for
/// each request, their expressions are not compiled again.
#[derive(Default)]
pub(crate) struct Programs {
    compiled: Mutex<HashMap<String, Arc<Result<IdedExpr, String>>>>,
}

impl Programs {
    /// `expression` compiled and metered ([`metered`]), or why it does not compile.
    pub(crate) fn get(&self, expression: &str) -> Arc<Result<IdedExpr, String>> {
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(program) = compiled.get(expression) {
            return program.clone();
        }
        if compiled.len() >= MAX_PROGRAMS {
            compiled.clear();
        }
        let program = Arc::new(
            Program::compile(expression)
                .map_err(|e| format!("compilation failed: {e}"))
                .and_then(|program| match unsupported(program.expression()) {
                    Some(what) => Err(format!("compilation failed: {what} is not supported")),
                    None => Ok(metered(program.expression())),
                }),
        );
        compiled.insert(expression.to_string(), program.clone());
        program
    }
}

/// The first construct of `expr` the `cel` crate's interpreter cannot evaluate (it panics on
/// them): object construction (`Type{field: value}`), used by mutating policies' apply
/// configurations and JSON patches.
fn unsupported(expr: &IdedExpr) -> Option<&'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_is_compiled_once() {
        let programs = Programs::default();
        let first = programs.get("object.metadata.labels.tier == 'gold'");
        let again = programs.get("object.metadata.labels.tier == 'gold'");
        assert!(first.is_ok());
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(programs.compiled.lock().unwrap().len(), 1);
        assert!(matches!(&*programs.get("object.("), Err(e) if e.contains("compilation failed")));
    }

    #[test]
    fn object_construction_is_refused_not_evaluated() {
        // The interpreter would panic on it.
        let programs = Programs::default();
        for expression in [
            "Object{metadata: Object.metadata{labels: {'a': 'b'}}}",
            "[1].map(x, JSONPatch{op: 'add', path: '/a', value: x})",
            "{'k': Foo{}}.size() > 0",
        ] {
            assert!(
                matches!(&*programs.get(expression), Err(e) if e.contains("object construction")),
                "{expression}"
            );
        }
        assert!(programs.get("{'a': [1, 2].all(x, x > 0)}").is_ok());
    }
}
