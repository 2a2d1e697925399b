//! CEL's runtime cost budget per call, as upstream's `PerCallLimit`: an expression that does more
//! work than the limit stops with upstream's `operation cancelled: actual cost limit exceeded`,
//! instead of running on with the request waiting.
//!
//! The `cel` crate counts nothing while it evaluates, so the expression is metered: each step of
//! each comprehension (`all`, `exists`, `map`, `filter`…) is wrapped in a call of a function the
//! meter installs, which charges the step's size (its nodes) and fails once the budget is spent.
//! The cost is that of upstream's model in kind (work grows with the iterations, nested ones
//! multiply), not to the unit: string and regex functions are charged as one node whatever the
//! length of their arguments.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, LiteralValue};
use kube_cel::cel::common::types::CelInt;
use kube_cel::cel::{Context, ExecutionError, IdedExpr, Value as CelValue};

/// Upstream's most a single expression may cost (`celconfig.PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// Upstream's error when an expression exceeds its budget.
pub(crate) const OUT_OF_BUDGET: &str = "operation cancelled: actual cost limit exceeded";

/// The function the meter installs (a name no expression of a user's can mean).
const CHARGE: &str = "__apiserver_framework_charge";

/// The nodes of `expr`: its size, the cost of one evaluation of it.
fn nodes(expr: &IdedExpr) -> u64 {
    1 + crate::cel::children(expr)
        .into_iter()
        .map(nodes)
        .sum::<u64>()
}

/// A map's or an object's entries, metered.
fn meter_entries(entries: &mut [IdedEntryExpr]) {
    for entry in entries {
        match &mut entry.expr {
            EntryExpr::MapEntry(e) => {
                e.key = metered(&e.key);
                e.value = metered(&e.value);
            }
            EntryExpr::StructField(f) => f.value = metered(&f.value),
        }
    }
}

/// `expr` with the step of each of its comprehensions charged to the meter.
pub(crate) fn metered(expr: &IdedExpr) -> IdedExpr {
    let rewritten = match &expr.expr {
        Expr::Comprehension(c) => {
            let mut c = c.clone();
            let weight = nodes(&c.loop_step) + nodes(&c.loop_cond);
            c.iter_range = metered(&c.iter_range);
            c.accu_init = metered(&c.accu_init);
            c.loop_cond = metered(&c.loop_cond);
            c.result = metered(&c.result);
            let step = metered(&c.loop_step);
            c.loop_step = IdedExpr {
                id: step.id,
                expr: Expr::Call(kube_cel::cel::common::ast::CallExpr {
                    func_name: CHARGE.to_string(),
                    target: None,
                    args: vec![
                        IdedExpr {
                            id: step.id,
                            expr: Expr::Literal(LiteralValue::Int(CelInt::from(
                                i64::try_from(weight).unwrap_or(i64::MAX),
                            ))),
                        },
                        step,
                    ],
                }),
            };
            Expr::Comprehension(c)
        }
        Expr::Call(call) => {
            let mut call = call.clone();
            call.target = call.target.as_deref().map(|t| Box::new(metered(t)));
            call.args = call.args.iter().map(metered).collect();
            Expr::Call(call)
        }
        Expr::Select(select) => {
            let mut select = select.clone();
            select.operand = Box::new(metered(&select.operand));
            Expr::Select(select)
        }
        Expr::List(list) => {
            let mut list = list.clone();
            list.elements = list.elements.iter().map(metered).collect();
            Expr::List(list)
        }
        Expr::Map(map) => {
            let mut map = map.clone();
            meter_entries(&mut map.entries);
            Expr::Map(map)
        }
        Expr::Struct(object) => {
            let mut object = object.clone();
            meter_entries(&mut object.entries);
            Expr::Struct(object)
        }
        other => other.clone(),
    };
    IdedExpr {
        id: expr.id,
        expr: rewritten,
    }
}

/// The budget of the expressions run in one context.
#[derive(Clone)]
pub(crate) struct Meter {
    spent: Arc<AtomicU64>,
    limit: u64,
}

impl Meter {
    /// A meter of `limit` per call, installed in `context`.
    pub(crate) fn install(context: &mut Context<'_>, limit: u64) -> Meter {
        let meter = Meter {
            spent: Arc::new(AtomicU64::new(0)),
            limit,
        };
        let charged = meter.clone();
        context.add_function(
            CHARGE,
            move |weight: i64, value: CelValue| -> Result<CelValue, ExecutionError> {
                charged.charge(CHARGE, u64::try_from(weight).unwrap_or(u64::MAX))?;
                Ok(value)
            },
        );
        meter
    }

    /// Charges `cost` for a call of `function` to the expression running: an error once its
    /// budget is spent.
    pub(crate) fn charge(&self, function: &str, cost: u64) -> Result<(), ExecutionError> {
        let spent = self
            .spent
            .fetch_add(cost, Ordering::Relaxed)
            .saturating_add(cost);
        if spent > self.limit {
            return Err(ExecutionError::function_error(function, OUT_OF_BUDGET));
        }
        Ok(())
    }

    /// Runs `expr` (made by [`metered`]) in `context`, where this meter is installed; an
    /// expression over budget fails with [`OUT_OF_BUDGET`].
    pub(crate) fn run(&self, expr: &IdedExpr, context: &Context<'_>) -> Result<CelValue, String> {
        self.spent.store(nodes(expr), Ordering::Relaxed);
        let result = CelValue::resolve(expr, context);
        if self.spent.load(Ordering::Relaxed) > self.limit {
            return Err(OUT_OF_BUDGET.to_string());
        }
        result.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::KubeCelExt as _;
    use kube_cel::cel::Program;

    fn run(expression: &str, limit: u64) -> Result<CelValue, String> {
        let mut context = Context::default().with_all();
        let meter = Meter::install(&mut context, limit);
        let program = Program::compile(expression).unwrap();
        meter.run(&metered(program.expression()), &context)
    }

    #[test]
    fn cheap_expressions_run_and_expensive_ones_stop() {
        assert_eq!(
            run(
                "[1, 2, 3].all(x, x > 0) && [1, 2].map(x, x * 2) == [2, 4]",
                PER_CALL_LIMIT
            ),
            Ok(CelValue::Bool(true))
        );
        // 10^9 steps: stopped after about a million.
        let started = std::time::Instant::now();
        assert_eq!(
            run(
                "lists.range(1000).all(x, lists.range(1000).all(y, lists.range(1000).all(z, x + y + z >= 0)))",
                PER_CALL_LIMIT
            ),
            Err(OUT_OF_BUDGET.to_string())
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        // The budget is per call: a second run starts afresh.
        let mut context = Context::default().with_all();
        let meter = Meter::install(&mut context, 100);
        let small = metered(
            Program::compile("[1, 2, 3].exists(x, x == 3)")
                .unwrap()
                .expression(),
        );
        assert_eq!(meter.run(&small, &context), Ok(CelValue::Bool(true)));
        assert_eq!(meter.run(&small, &context), Ok(CelValue::Bool(true)));
    }
}
