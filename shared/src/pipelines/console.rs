//! The log console's logic: ANSI colours, timestamps, search over every line, and which lines are in view.
