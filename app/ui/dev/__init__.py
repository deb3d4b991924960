"""Development tools of the window, never shipped: the bundle excludes this package
(``installer/callisto.spec``, ``DEV_ONLY``).

* :mod:`app.ui.dev.screenshots` drives the real window into one main state and saves a PNG
  (``python -m app --screenshot PATH --state STATE``; ``make screenshots`` renders them all);
  :mod:`app.ui.dev.screenshot_pages` opens the pages its states show besides the chat (Check,
  Server, a remote engine) and says in words what each picture shows; :mod:`app.ui.dev.screenshot_theme`
  switches the theme at run time for the ``theme-switch`` state.

Nothing in the shipped app imports this package except the ``--screenshot`` option, which says
so when it runs in a bundle. It stays inside ``app/`` (rather than under ``tests/``) because the
``--screenshot`` flag is a public contract of ``python -m app`` from a source checkout or a pip
install, and because it drives the window's own parts: it is linted, type-checked and held to the
import contracts with them.
"""
