"""How the viewer is driven in a headless browser (its tests and scripts/screenshots.py): Debian's
Chromium, with the flags that keep it off the network this machine does not have."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
