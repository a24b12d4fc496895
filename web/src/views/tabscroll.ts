// Scroll buttons at the ends of an overflowing tab strip. The faded edge
// alone (tabs.ts marks more-left and more-right) was easy to miss, and a
// mouse without a horizontal wheel had no way to the tabs past it but the
// 3-pixel scrollbar. The buttons lie over the faded edges (phone.css), so
// showing them takes no room from the tabs and cannot change the overflow.

import { h } from '../shared/dom';

export function addTabScrollButtons(strip: HTMLElement): void {
  const make = (dir: 'left' | 'right') =>
    h(
      'button',
      {
        type: 'button',
        class: `tab-scroll tab-scroll-${dir}`,
        'data-testid': `tabs-scroll-${dir}`,
        'aria-label': `Scroll the tabs ${dir}`,
        title: `More tabs to the ${dir}`,
        // The tab list has the arrow keys, Home and End: no extra stops.
        tabindex: -1,
        hidden: true,
      },
      arrow(dir),
    );
  const left = make('left');
  const right = make('right');
  strip.before(left);
  strip.after(right);
  const step = (sign: number) => strip.scrollBy({ left: sign * Math.max(120, strip.clientWidth * 0.7), behavior: 'smooth' });
  left.addEventListener('click', () => step(-1));
  right.addEventListener('click', () => step(1));
  const sync = () => {
    left.hidden = !strip.classList.contains('more-left');
    right.hidden = !strip.classList.contains('more-right');
  };
  new MutationObserver(sync).observe(strip, { attributes: true, attributeFilter: ['class'] });
  sync();
}

function arrow(dir: 'left' | 'right'): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', dir === 'left' ? 'M10 4L6 8l4 4' : 'M6 4l4 4-4 4');
  svg.append(p);
  return svg;
}
