"""The review page in a real headless browser (Debian's chromium + chromium-driver through Selenium): a click and a
key press each store a decision. Skipped, with the reason, only where chromium is not installed; in CI (CI set) a
missing browser is a failure: .ci/run installs it."""

from __future__ import annotations

import os
import shutil
import threading

import pytest
from labelling_helpers import ANSWERS, open_store

from eval import label as eval_label
from eval.review import make_server
from hiera_dspy.review.decisions import DecisionLog
from hiera_dspy.review.session import Review

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,900")


def browser(profile):
    if not (CHROMIUM and DRIVER):
        reason = "chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {reason}")
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))


@pytest.fixture
def page(unlabelled, patch_make_lm, tmp_path):
    patch_make_lm(ANSWERS)
    run_id = eval_label.main(["--dataset", f"jsonl:{unlabelled}", "--labels", "Bad,Good", "--method", "dream",
                              "--lm", "fake", "--knowledge", "none", "--out", str(tmp_path / "mine")])["run_id"]
    store = open_store()
    server = make_server(Review(store, run_id, budget=1, who="ana"), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = browser(tmp_path / "profile")
    try:
        yield driver, f"http://127.0.0.1:{server.server_address[1]}/", store, run_id, tmp_path / "mine"
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


def test_click_and_key_store_decisions(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver, url, store, run_id, out = page
    driver.get(url)
    wait = WebDriverWait(driver, 15)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queue li")) == 2)
    assert driver.find_element(By.ID, "query").text == "maybe something"
    assert driver.find_element(By.ID, "machine-label").text == "none (escalated)"
    assert "Round 0, advocate (relevant)" in driver.find_element(By.ID, "transcript").text
    driver.find_element(By.CSS_SELECTOR, '#labels button[data-label="Good"]').click()
    wait.until(lambda d: "stored Good for p4" in d.find_element(By.ID, "status").text)
    assert {r["id"]: r["human_label"] for r in store.rows(run_id)}["p4"] == "Good"
    # the page moved on to the next undecided pair (p3, confidence 0.75); key 1 picks the first label
    wait.until(lambda d: d.find_element(By.ID, "pair-id").text == "p3")
    driver.find_element(By.TAG_NAME, "body").send_keys("1")
    wait.until(lambda d: "stored Bad for p3" in d.find_element(By.ID, "status").text)
    latest = DecisionLog(store.path).latest(run_id)
    assert (latest["p3"]["label"], latest["p3"]["who"], latest["p3"]["via"]) == ("Bad", "ana", "review-page")
    assert "q3 0 d3 0" in (out / "qrels.txt").read_text() and "q4 0 d4 1" in (out / "qrels.txt").read_text()
    assert driver.find_element(By.ID, "progress").text == "2 of 2 decided"
    # everything the page loaded came from the local server (no CDN)
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(name.startswith(url) for name in resources)
    driver.save_screenshot(str(out / "review.png"))
