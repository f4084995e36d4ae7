//! The rule book as the Rules card edits it: drafts validated by the engine, saved and deleted,
//! and persisted (or put back as they were when saving fails).

use super::{lock, AppCore};
use crate::error::AppError;
use crate::rules::{RuleBook, RuleDraft};
use ratelockr::Rule;

impl AppCore {
    pub fn rules(&self) -> Vec<Rule> {
        lock(&self.rules).rules().to_vec()
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

    /// Applies `edit` to the rules and persists them; when saving fails, the rules are put back
    /// as they were, so memory never claims what the file does not hold.
    fn edit_rules(
        &self,
        edit: impl FnOnce(&mut RuleBook) -> Result<(), AppError>,
    ) -> Result<Vec<Rule>, AppError> {
        let mut book = lock(&self.rules);
        let before = book.clone();
        edit(&mut book)?;
        let rules = book.rules().to_vec();
        drop(book);
        if let Err(err) = self.save() {
            *lock(&self.rules) = before;
            return Err(err);
        }
        self.metrics.set_active_rules(rules.len());
        Ok(rules)
    }
}
