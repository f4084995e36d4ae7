//! The rule book as the Rules card edits it: drafts validated by the engine, saved and deleted,
//! and persisted (or put back as they were when saving fails).

use super::{lock, AppCore};
use crate::error::AppError;
use crate::rules::{RuleBook, RuleDraft};
use ratelockr::Rule;

impl AppCore {
    pub fn rules(&self) -> Vec<Rule> {
        lock(&self.rules).items().to_vec()
    }

    pub fn rule_validate(&self, draft: &RuleDraft) -> Result<Rule, AppError> {
        draft.to_rule()
    }

    /// Creates (`original` None) or replaces a rule, persists, and returns all rules.
    pub fn rule_save(
        &self,
        original: Option<&str>,
        draft: &RuleDraft,
    ) -> Result<Vec<Rule>, AppError> {
        let rule = draft.to_rule()?;
        self.edit_rules(|book| book.upsert(original, rule))
    }

    pub fn rule_delete(&self, name: &str) -> Result<Vec<Rule>, AppError> {
        self.edit_rules(|book| book.remove(name).map(drop))
    }

    /// Applies `edit` to the rules and persists them (see [`AppCore::edit_book`]).
    fn edit_rules(
        &self,
        edit: impl FnOnce(&mut RuleBook) -> Result<(), AppError>,
    ) -> Result<Vec<Rule>, AppError> {
        let rules = self.edit_book(&self.rules, edit)?;
        self.metrics.set_active_rules(rules.len());
        Ok(rules)
    }
}
