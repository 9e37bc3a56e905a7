//! TEMPORARY STUB (replaced by the select branch).
use serde_json::Value;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Compact,
    Standard,
    Full,
}
impl View {
    pub fn parse(s: &str) -> Option<View> {
        match s {
            "compact" => Some(View::Compact),
            "standard" => Some(View::Standard),
            "full" => Some(View::Full),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            View::Compact => "compact",
            View::Standard => "standard",
            View::Full => "full",
        }
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Include,
    Exclude,
}
impl Param {
    pub fn as_str(self) -> &'static str {
        match self {
            Param::Include => "include",
            Param::Exclude => "exclude",
        }
    }
}
#[derive(Debug, Clone)]
pub struct SelectorError {
    pub param: Param,
    pub message: String,
}
#[derive(Debug, Clone)]
pub struct Selection {
    canon: String,
}
impl Selection {
    pub fn view(view: View) -> Selection {
        Selection {
            canon: view.as_str().into(),
        }
    }
    pub fn include(list: &str) -> Result<Selection, SelectorError> {
        if list.is_empty() {
            return Err(SelectorError {
                param: Param::Include,
                message: "Unknown field selector: ".into(),
            });
        }
        Ok(Selection { canon: list.into() })
    }
    pub fn exclude(base: View, list: &str) -> Result<Selection, SelectorError> {
        Ok(Selection {
            canon: format!("{}-{list}", base.as_str()),
        })
    }
    pub fn apply(&self, doc: &Value) -> Value {
        doc.clone()
    }
    pub fn canonical(&self) -> String {
        self.canon.clone()
    }
}
