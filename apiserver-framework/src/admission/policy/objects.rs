//! Objects built by CEL expressions (`Object{metadata: Object.metadata{labels: {...}}}`,
//! `JSONPatch{op: 'add', path: '/a', value: 1}`), as mutating admission policies write them.
//!
//! The `cel` crate parses object construction but its interpreter cannot evaluate it, so an
//! expression is evaluated with each object construction read as a map of its fields: the type
//! names only say what the object is, which the mutation's `patchType` already tells.

use kube_cel::cel::common::ast::{
    EntryExpr, Expr, IdedEntryExpr, LiteralValue, MapEntryExpr, MapExpr,
};
use kube_cel::cel::common::types::CelString;
use kube_cel::cel::{Context, IdedExpr, Program};

use crate::admission::programs::Programs;
use crate::cel::cost::{Meter, metered};
use crate::cel::json::from_cel;

/// `expr` with every object construction turned into the map of its fields.
fn as_maps(expr: &IdedExpr) -> IdedExpr {
    let rewritten = match &expr.expr {
        Expr::Struct(object) => Expr::Map(MapExpr {
            entries: object.entries.iter().map(entry_as_map).collect(),
        }),
        Expr::Map(map) => Expr::Map(MapExpr {
            entries: map.entries.iter().map(entry_as_map).collect(),
        }),
        Expr::Call(call) => {
            let mut call = call.clone();
            call.target = call.target.as_deref().map(|t| Box::new(as_maps(t)));
            call.args = call.args.iter().map(as_maps).collect();
            Expr::Call(call)
        }
        Expr::List(list) => {
            let mut list = list.clone();
            list.elements = list.elements.iter().map(as_maps).collect();
            Expr::List(list)
        }
        Expr::Select(select) => {
            let mut select = select.clone();
            select.operand = Box::new(as_maps(&select.operand));
            Expr::Select(select)
        }
        Expr::Comprehension(c) => {
            let mut c = c.clone();
            c.iter_range = as_maps(&c.iter_range);
            c.accu_init = as_maps(&c.accu_init);
            c.loop_cond = as_maps(&c.loop_cond);
            c.loop_step = as_maps(&c.loop_step);
            c.result = as_maps(&c.result);
            Expr::Comprehension(c)
        }
        other => other.clone(),
    };
    IdedExpr {
        id: expr.id,
        expr: rewritten,
    }
}

/// A map's or an object's entry as a map entry (an object's field by its name), its key and
/// value read as maps too.
fn entry_as_map(entry: &IdedEntryExpr) -> IdedEntryExpr {
    let expr = match &entry.expr {
        EntryExpr::StructField(field) => EntryExpr::MapEntry(MapEntryExpr {
            key: IdedExpr {
                id: entry.id,
                expr: Expr::Literal(LiteralValue::String(CelString::from(field.field.clone()))),
            },
            value: as_maps(&field.value),
            optional: field.optional,
        }),
        EntryExpr::MapEntry(e) => EntryExpr::MapEntry(MapEntryExpr {
            key: as_maps(&e.key),
            value: as_maps(&e.value),
            optional: e.optional,
        }),
    };
    IdedEntryExpr { id: entry.id, expr }
}

/// `expression` compiled with its object constructions read as maps, and metered; for
/// [`Programs::with`].
pub(crate) fn compile(expression: &str) -> Result<IdedExpr, String> {
    let program = Program::compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
    let expr = as_maps(program.expression());
    match crate::cel::unsupported(&expr) {
        Some(what) => Err(format!("compilation failed: {what} is not supported")),
        None => Ok(metered(&expr)),
    }
}

/// Evaluates `expression` (compiled once through `programs`, made with [`compile`]) in
/// `context`: the value as JSON, or upstream's message for what failed.
pub(crate) fn evaluate(
    programs: &Programs,
    expression: &str,
    context: &Context,
    meter: &Meter,
) -> Result<serde_json::Value, String> {
    let expr = match &*programs.get(expression) {
        Ok(expr) => expr.clone(),
        Err(e) => return Err(format!("compilation error: {e}")),
    };
    let value = meter
        .run(&expr, context)
        .map_err(|e| format!("expression '{expression}' resulted in error: {e}"))?;
    from_cel(&value).map_err(|e| format!("expression '{expression}' resulted in error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::Value as CelValue;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn object_constructions_are_maps_of_their_fields() {
        let mut context = Context::default();
        context.add_variable_from_value("n", CelValue::Int(2));
        let meter = Meter::install(&mut context, crate::cel::cost::PER_CALL_LIMIT);
        let programs = Programs::with(compile);
        assert_eq!(
            evaluate(
                &programs,
                "Object{metadata: Object.metadata{labels: {'mutated': 'yes'}}, spec: Object.spec{replicas: n * 2}}",
                &context, &meter
            )
            .unwrap(),
            json!({"metadata": {"labels": {"mutated": "yes"}}, "spec": {"replicas": 4}})
        );
        assert_eq!(
            evaluate(
                &programs,
                "[JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'b'}]",
                &context,
                &meter
            )
            .unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/a", "value": "b"}])
        );
        assert!(evaluate(&programs, "Object{a: missing}", &context, &meter).is_err());
        // Compiled once.
        assert!(Arc::ptr_eq(
            &programs.get("Object{a: missing}"),
            &programs.get("Object{a: missing}")
        ));
    }
}
