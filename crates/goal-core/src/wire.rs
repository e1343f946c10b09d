//! `wire_enum!`: an enum whose variants each have one wire name, declared once: the enum, its
//! `ALL`, `as_str`, `parse` (the exact name) and `parse_any_case` (trimmed, any case) all come from
//! the one list, so a name read and a name written cannot drift apart.

/// Declares `enum $name { $variant = "wire", … }` with `ALL`, `as_str`, `parse` and
/// `parse_any_case`. Attributes before `enum` (docs, extra derives) are kept; the enum always
/// derives `Debug, Clone, Copy, PartialEq, Eq, Hash`. A list is written as a table, one line a
/// variant: `#[doc = "What it means."] Variant = "wire",`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$doc:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$doc])* $variant,)*
        }

        // Not every list is read both ways, nor every one through `ALL`.
        #[allow(dead_code)]
        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$(Self::$variant,)*];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }

            /// Parses a wire name as written; anything else is `None`.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($wire => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// Parses a wire name trimmed and in any case (a model's or a person's answer).
            pub fn parse_any_case(text: &str) -> Option<Self> {
                let text = text.trim().to_lowercase();
                Self::ALL.iter().copied().find(|variant| variant.as_str().to_lowercase() == text)
            }
        }
    };
}

pub(crate) use wire_enum;

#[cfg(test)]
mod tests {
    wire_enum! {
        /// A list for the test.
        enum Light {
            /// Red.
            Red = "red",
            /// Amber, a name with a capital.
            AmberNow = "amberNow",
        }
    }

    #[test]
    fn every_name_reads_back_as_its_variant_and_only_as_written_unless_any_case() {
        for light in Light::ALL {
            assert_eq!(Light::parse(light.as_str()), Some(*light));
        }
        assert_eq!(Light::ALL, &[Light::Red, Light::AmberNow]);
        assert_eq!(Light::parse("Red"), None);
        assert_eq!(Light::parse(" red"), None);
        assert_eq!(Light::parse_any_case("  RED \n"), Some(Light::Red));
        assert_eq!(Light::parse_any_case("AMBERNOW"), Some(Light::AmberNow));
        assert_eq!(Light::parse_any_case("green"), None);
    }
}
