//! Writing-system guard for small-model output (audit notes, assist fields, distilled
//! objectives).
//!
//! Small models follow account-side personalization ("always answer in Korean") over the
//! prompt's language instruction. We cannot detect languages cheaply, but we can detect
//! scripts: if the model's output uses a tracked script that appears nowhere in the text it was
//! given, it switched language and the output is dropped.
//!
//! The check is presence-only and one-directional: output in Latin script is never flagged,
//! and a tracked script that is present in the reference may be used freely. Hangul is a class
//! of its own while Kana and Han share one class (Japanese mixes both and Chinese text is Han
//! only), so a Korean note for a Japanese objective is caught but a Japanese note for a Chinese
//! objective is not (reference PR #2851).

/// A tracked script class.
///
/// Latin and other scripts are deliberately not tracked: they are shared by too many languages
/// (and by code, paths and identifiers) for presence to mean anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Cyrillic, U+0400–U+04FF.
    Cyrillic,
    /// Hangul syllables (U+AC00–U+D7AF), Jamo (U+1100–U+11FF) and compatibility Jamo
    /// (U+3130–U+318F).
    Hangul,
    /// Hiragana and Katakana (U+3040–U+30FF) together with CJK ideographs (U+4E00–U+9FFF) and
    /// extension A (U+3400–U+4DBF): one class because Japanese text uses both.
    KanaHan,
    /// Devanagari, U+0900–U+097F.
    Devanagari,
    /// Arabic, U+0600–U+06FF.
    Arabic,
}

impl Script {
    /// Every tracked class, in the order [`scripts_present`] reports them.
    #[cfg(test)]
    const ALL: [Script; 5] = [Script::Cyrillic, Script::Hangul, Script::KanaHan, Script::Devanagari, Script::Arabic];

    /// Bit for this class in the internal presence mask.
    const fn bit(self) -> u8 {
        match self {
            Script::Cyrillic => 1,
            Script::Hangul => 1 << 1,
            Script::KanaHan => 1 << 2,
            Script::Devanagari => 1 << 3,
            Script::Arabic => 1 << 4,
        }
    }

    /// Class of one character, if it belongs to a tracked script.
    fn of(c: char) -> Option<Script> {
        match u32::from(c) {
            0x0400..=0x04FF => Some(Script::Cyrillic),
            0x0600..=0x06FF => Some(Script::Arabic),
            0x0900..=0x097F => Some(Script::Devanagari),
            0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Some(Script::Hangul),
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF => Some(Script::KanaHan),
            _ => None,
        }
    }
}

/// Mask with every class bit set: lets the scan stop early once all classes were seen.
const FULL_MASK: u8 = 0b1_1111;

/// Presence mask of the tracked scripts in `text`.
fn mask_of(text: &str) -> u8 {
    let mut mask = 0u8;
    for c in text.chars() {
        if let Some(script) = Script::of(c) {
            mask |= script.bit();
            if mask == FULL_MASK {
                break;
            }
        }
    }
    mask
}

/// Lists the tracked scripts that occur in `text`, each once, in [`Script`] declaration order.
///
/// An empty vector means the text uses no tracked script (for example plain ASCII).
#[cfg(test)]
pub fn scripts_present(text: &str) -> Vec<Script> {
    let mask = mask_of(text);
    Script::ALL.into_iter().filter(|script| mask & script.bit() != 0).collect()
}

/// Returns true when `output` uses a tracked script that `reference` does not contain.
///
/// `reference` is what the model was shown (for the audit: objective + "\n" + assistant text).
/// Fails closed: an empty or whitespace-only reference contains no script, so any tracked script
/// in the output counts as foreign. Output without tracked scripts is never flagged.
pub fn introduces_foreign_script(output: &str, reference: &str) -> bool {
    let out = mask_of(output);
    if out == 0 {
        // Nothing to check; skip scanning a possibly long reference.
        return false;
    }
    out & !mask_of(reference) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAPANESE: &str = "ログイン画面のバグを修正して、テストを追加する";
    const CHINESE: &str = "修复登录页面的错误并添加测试";
    const KOREAN: &str = "로그인 버그 수정 중, 테스트 남음";
    const RUSSIAN: &str = "Исправить ошибку входа";

    #[test]
    fn classifies_each_range() {
        assert_eq!(scripts_present(RUSSIAN), vec![Script::Cyrillic]);
        assert_eq!(scripts_present(KOREAN), vec![Script::Hangul]);
        assert_eq!(scripts_present(JAPANESE), vec![Script::KanaHan]);
        assert_eq!(scripts_present(CHINESE), vec![Script::KanaHan]);
        assert_eq!(scripts_present("परीक्षण"), vec![Script::Devanagari]);
        assert_eq!(scripts_present("اختبار"), vec![Script::Arabic]);
        // Jamo, compatibility Jamo and extension-A ideographs.
        assert_eq!(scripts_present("\u{1100}"), vec![Script::Hangul]);
        assert_eq!(scripts_present("\u{3131}"), vec![Script::Hangul]);
        assert_eq!(scripts_present("\u{3400}"), vec![Script::KanaHan]);
    }

    #[test]
    fn reports_each_class_once_in_order() {
        let mixed = format!("{KOREAN} {RUSSIAN} {JAPANESE} {RUSSIAN} اختبار");
        assert_eq!(scripts_present(&mixed), vec![Script::Cyrillic, Script::Hangul, Script::KanaHan, Script::Arabic]);
        assert!(scripts_present("plain ASCII, café, naïve — “quotes”").is_empty());
    }

    #[test]
    fn korean_note_for_japanese_objective_is_foreign() {
        assert!(introduces_foreign_script(KOREAN, JAPANESE));
    }

    #[test]
    fn japanese_note_for_chinese_objective_is_kept() {
        assert!(!introduces_foreign_script(JAPANESE, CHINESE));
        assert!(!introduces_foreign_script(CHINESE, JAPANESE));
    }

    #[test]
    fn cyrillic_note_for_english_objective_is_foreign() {
        assert!(introduces_foreign_script(RUSSIAN, "Fix the login bug"));
        assert!(!introduces_foreign_script(RUSSIAN, &format!("Fix it\n{RUSSIAN}")));
    }

    #[test]
    fn script_in_assistant_text_part_of_reference_counts() {
        let reference = format!("Fix the login bug\n{KOREAN}");
        assert!(!introduces_foreign_script("로그인 수정 완료", &reference));
    }

    #[test]
    fn empty_reference_fails_closed() {
        assert!(introduces_foreign_script(KOREAN, ""));
        assert!(introduces_foreign_script(JAPANESE, "  \n\t"));
        assert!(!introduces_foreign_script("Tests pass.", ""));
    }

    #[test]
    fn plain_ascii_output_is_never_flagged() {
        for reference in ["", JAPANESE, KOREAN, RUSSIAN, "English objective"] {
            assert!(!introduces_foreign_script("Parser done; tests remain.", reference));
        }
    }

    #[test]
    fn partial_overlap_still_flags_the_new_script() {
        // Output uses Han (present) and Hangul (absent): the Hangul is foreign.
        assert!(introduces_foreign_script(&format!("{CHINESE} {KOREAN}"), CHINESE));
    }
}
