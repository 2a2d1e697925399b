//! CEL expressions compiled once, by their text: the host's webhook configurations and
//! admission policies are read again for each request, their expressions are not compiled
//! again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::cel::IdedExpr;

use crate::cel::compile;
use crate::cel::cost::metered;

/// The most compiled expressions kept; past it the cache starts over (the expressions come
/// from the host's webhook configurations and policies, so the set is small and changes
/// rarely).
const MAX_PROGRAMS: usize = 1024;

/// Expressions compiled once, by their text: the host's configurations are read again for
/// each request, their expressions are not compiled again.
pub(crate) struct Programs {
    compiled: Mutex<HashMap<String, Arc<Result<IdedExpr, String>>>>,
    /// How an expression is compiled.
    build: fn(&str) -> Result<IdedExpr, String>,
}

impl Default for Programs {
    fn default() -> Self {
        Programs::with(|expression| {
            compile(expression).map(|program| metered(program.expression()))
        })
    }
}

impl Programs {
    /// Expressions compiled by `build` (e.g. a mutation's, whose object constructions are read
    /// as maps), once each.
    pub(crate) fn with(build: fn(&str) -> Result<IdedExpr, String>) -> Self {
        Programs {
            compiled: Mutex::new(HashMap::new()),
            build,
        }
    }

    /// `expression` compiled and metered ([`metered`]), or why it does not compile.
    pub(crate) fn get(&self, expression: &str) -> Arc<Result<IdedExpr, String>> {
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(program) = compiled.get(expression) {
            return program.clone();
        }
        if compiled.len() >= MAX_PROGRAMS {
            compiled.clear();
        }
        let program = Arc::new((self.build)(expression));
        compiled.insert(expression.to_string(), program.clone());
        program
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
