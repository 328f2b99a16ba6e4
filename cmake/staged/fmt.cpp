// fmt's compiled part, built from the staged headers (HPCBENCH_DEPS_DIR): the
// folder that tools/gpu/stage-deps.sh copies holds fmt's headers only, not its
// sources. Compiled this way rather than used header-only (FMT_HEADER_ONLY), the
// project's own translation units see fmt exactly as they do in a build against
// Debian's libfmt-dev, so that ccache serves one build's compiles to the other.
// format-inl.h defines the non-template functions that format.h declares
// FMT_API; the instantiations below are the templates that format.h declares
// and defines only in format-inl.h (written for fmt 9, Debian 12's).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
