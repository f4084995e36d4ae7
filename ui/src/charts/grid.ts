/** The grids of small charts (the live chart, Watch): one panel per rule or policy. */

/** A grid's column count: one per panel, at least one, at most `maxCols`. */
export function gridColumns(panels: number, maxCols: number): number {
  return Math.min(Math.max(panels, 1), maxCols);
}

/** The plot size of each panel of a grid in `container` (12 px gaps, 24 px of panel padding). */
export function gridPlotSize(container: HTMLElement, panels: number, maxCols: number): { width: number; height: number } {
  const cols = gridColumns(panels, maxCols);
  const gap = 12;
  const width = Math.max(220, Math.floor((container.clientWidth - gap * (cols - 1)) / cols) - 24);
  return { width, height: 170 };
}
